// Package helper is called from orchestration code in package orch.
package helper

import "time"

// Stamp reads the wall clock.
func Stamp() int64 { return time.Now().Unix() }
