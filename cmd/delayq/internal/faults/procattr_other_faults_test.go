//go:build faults && !linux

package faults_test

import "os/exec"

// setProcAttr does nothing where there is no parent-death signal; agents end by -max-time.
func setProcAttr(*exec.Cmd) {}

// lowerPriority does nothing here.
func lowerPriority(pid, n int) error { return nil }
