package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFileIsUpToDate: payload/capabilities_gen.go is what capgen
// writes from payload/capabilities.go, so a group added by hand without
// `go generate ./payload` fails here.
func TestGeneratedFileIsUpToDate(t *testing.T) {
	dir := filepath.Join("..", "..")
	src, err := os.ReadFile(filepath.Join(dir, source))
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, target))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what capgen writes from %s: run go generate ./payload", target, source)
	}
}

func TestGroupsFollowTheConstants(t *testing.T) {
	src := []byte("package payload\n\nconst (\n\tcapA = 1 << iota\n\tcapBeeCee\n\tcapCombinations = 1 << iota\n)\n")
	gs, err := groups(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0] != "a" || gs[1] != "beeCee" {
		t.Fatalf("groups = %v, want [a beeCee]", gs)
	}
}
