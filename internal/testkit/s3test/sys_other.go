//go:build !linux

package s3test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// sysProcAttr has nothing to set outside Linux: a gateway outlives a
// killed test process there.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// lock takes an exclusive lock by creating the directory path, waiting up
// to 20 minutes for another holder, and returns its release.
func lock(path string) (unlock func(), err error) {
	path += ".d"
	for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(time.Second) {
		err := os.Mkdir(path, 0o755)
		if err == nil {
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) || time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
}
