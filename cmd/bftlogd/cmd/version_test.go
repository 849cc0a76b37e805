package cmd

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// A binary built without scripts/ldflags.sh names itself and its commit from Go's build info,
// as ldflags.sh would have; what -ldflags did set is kept.
func TestVersionFromBuildInfo(t *testing.T) {
	const rev = "280ba21b9bb37d37dd864b803bacd07435f3f388"
	vcs := func(main string, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/bftlog/bftlog", Version: main}, Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-12-03T17:53:49Z"}, {Key: "vcs.modified", Value: modified},
		}}
	}
	defaults := buildVersion{AppName: "<appd>"} // the SDK's version package unstamped
	for _, tc := range []struct {
		name string
		have buildVersion
		bi   *debug.BuildInfo
		want buildVersion
	}{
		{"go build, clean work tree", defaults, vcs("v0.0.0-20261203175349-280ba21b9bb3", "false"),
			buildVersion{"bftlog", "bftlogd", "280ba21", rev}},
		{"go build, changed work tree", defaults, vcs("v0.0.0-20261203175349-280ba21b9bb3+dirty", "true"),
			buildVersion{"bftlog", "bftlogd", "280ba21-dirty", rev}},
		{"go build at a tag", defaults, vcs("v1.2.0", "false"), buildVersion{"bftlog", "bftlogd", "v1.2.0", rev}},
		{"go build at a tag, changed", defaults, vcs("v1.2.0+dirty", "true"), buildVersion{"bftlog", "bftlogd", "v1.2.0-dirty", rev}},
		{"after a tag", defaults, vcs("v1.2.1-0.20261203175349-280ba21b9bb3", "false"),
			buildVersion{"bftlog", "bftlogd", "280ba21", rev}},
		{"go install module@v1.2.0", defaults, &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}},
			buildVersion{"bftlog", "bftlogd", "v1.2.0", ""}},
		{"go install module@commit", defaults, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203175349-280ba21b9bb3"}},
			buildVersion{"bftlog", "bftlogd", "v0.0.0-20261203175349-280ba21b9bb3", ""}},
		{"-buildvcs=false", defaults, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			buildVersion{"bftlog", "bftlogd", "unknown", ""}},
		{"no build info", defaults, nil, buildVersion{"bftlog", "bftlogd", "unknown", ""}},
		{"ldflags win", buildVersion{"other", "otherd", "v9.9.9", "abc"}, vcs("v1.2.0", "true"),
			buildVersion{"other", "otherd", "v9.9.9", "abc"}},
		{"ldflags VERSION only", buildVersion{AppName: "<appd>", Version: "v2.0.0"}, vcs("(devel)", "false"),
			buildVersion{"bftlog", "bftlogd", "v2.0.0", rev}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.have.orFromBuildInfo(tc.bi))
		})
	}
}
