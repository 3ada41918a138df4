package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/attune/attune/internal/config"
)

// openPTY opens a pseudo-terminal's pair: what a person's terminal is to
// a process.
func openPTY(t *testing.T) (ptmx, pts *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptmx, pts
}

// TestLogFormat: by default logs are text on a terminal and JSON into a
// file or a pipe; ATTUNE_LOG_FORMAT wins either way.
func TestLogFormat(t *testing.T) {
	cfg := func(format string) config.Config {
		c, err := config.Load(func(k string) string {
			if k == "ATTUNE_LOG_FORMAT" {
				return format
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	file, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_, pts := openPTY(t)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()

	for _, tc := range []struct {
		name, format string
		to           *os.File
		json         bool
	}{
		{"a file, by default", "", file, true},
		{"a pipe, by default", "", w, true},
		{"/dev/null, by default", "", devNull, true},
		{"a terminal, by default", "", pts, false},
		{"a terminal, asked for JSON", "json", pts, true},
		{"a file, asked for text", "text", file, false},
	} {
		if got := isTerminal(tc.to); got != (tc.to == pts) {
			t.Errorf("%s: isTerminal = %v", tc.name, got)
		}
		log := newLogger(cfg(tc.format), tc.to)
		if tc.to == file {
			// What reaches the file is the format: read the line back.
			file.Truncate(0)
			file.Seek(0, 0)
			log.Info("hello", "n", 1)
			b, _ := os.ReadFile(file.Name())
			if isJSON := strings.HasPrefix(string(b), "{"); isJSON != tc.json || !strings.Contains(string(b), "hello") {
				t.Errorf("%s: wrote %q", tc.name, b)
			}
		}
		switch h := log.Handler(); {
		case tc.json && !strings.Contains(fmt.Sprintf("%T", h), "JSON"):
			t.Errorf("%s: %T, want JSON", tc.name, h)
		case !tc.json && !strings.Contains(fmt.Sprintf("%T", h), "Text"):
			t.Errorf("%s: %T, want text", tc.name, h)
		}
	}
	if _, err := config.Load(func(k string) string {
		if k == "ATTUNE_LOG_FORMAT" {
			return "xml"
		}
		return ""
	}); err == nil || !strings.Contains(err.Error(), "ATTUNE_LOG_FORMAT") {
		t.Errorf("ATTUNE_LOG_FORMAT=xml: %v", err)
	}
}
