//go:build soak

package soak

import (
	"os"
	"testing"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestMain removes the bftlogd this test process built once every test is done.
func TestMain(m *testing.M) { os.Exit(node.Main(m)) }
