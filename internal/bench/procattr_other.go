//go:build !linux

package bench

import "os/exec"

// setProcAttr does nothing outside Linux, which has no parent-death signal.
func setProcAttr(cmd *exec.Cmd) {}
