package cmd

import (
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/cosmos/cosmos-sdk/version"
)

// The names scripts/ldflags.sh stamps.
const (
	versionName    = "bftlog"
	versionAppName = "bftlogd"
)

// StampVersion fills the Cosmos SDK's version variables (`bftlogd version --long`, the node_info
// an explorer shows) that -ldflags left at their defaults: a binary built by `go build` or
// `go install` without scripts/ldflags.sh still names itself and the commit it was built from.
// Values given with -ldflags are kept.
func StampVersion() {
	bi, _ := debug.ReadBuildInfo()
	v := buildVersion{Name: version.Name, AppName: version.AppName, Version: version.Version, Commit: version.Commit}
	v = v.orFromBuildInfo(bi)
	version.Name, version.AppName, version.Version, version.Commit = v.Name, v.AppName, v.Version, v.Commit
}

// buildVersion is what the SDK's version package reports.
type buildVersion struct{ Name, AppName, Version, Commit string }

// pseudoVersion matches the tail of a Go pseudo-version (v0.0.0-20261203175349-280ba21b9bb3),
// which Go gives a module built at a commit that no tag names.
var pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// orFromBuildInfo fills the fields still at the SDK's defaults ("", AppName "<appd>") from the
// build info Go embeds, as scripts/ldflags.sh would have set them. Version is what `git describe
// --tags --always --dirty` prints where Go can tell: the tag when built at one (v1.2.0, also
// `go install module@v1.2.0`), else the abbreviated commit (as in a clone without tags); either
// with "-dirty" when the work tree had changes. Else the pseudo-version of `go install
// module@commit`, else "unknown". Commit is the full commit hash. Go records the commit only
// when it builds in a git work tree with -buildvcs on (the default, "auto").
func (v buildVersion) orFromBuildInfo(bi *debug.BuildInfo) buildVersion {
	if v.Name == "" {
		v.Name = versionName
	}
	if v.AppName == "" || v.AppName == "<appd>" {
		v.AppName = versionAppName
	}
	var revision string
	var modified bool
	mainVersion := ""
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if bi.Main.Version != "(devel)" {
			mainVersion = bi.Main.Version
		}
	}
	if v.Commit == "" {
		v.Commit = revision
	}
	if v.Version == "" {
		tag, dirty := strings.CutSuffix(mainVersion, "+dirty")
		switch {
		case tag != "" && !pseudoVersion.MatchString(tag):
			v.Version = tag // built at a tag, which git describe prints alone
			if dirty || modified {
				v.Version += "-dirty"
			}
		case revision != "":
			v.Version = revision[:min(7, len(revision))]
			if modified {
				v.Version += "-dirty"
			}
		case mainVersion != "":
			v.Version = mainVersion // go install module@commit: no VCS settings, a pseudo-version
		default:
			v.Version = "unknown"
		}
	}
	return v
}
