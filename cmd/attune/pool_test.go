package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

func TestPoolSettingsInDatabaseURL(t *testing.T) {
	t.Parallel()
	// A missing database, so that the command also connects to the
	// server's maintenance database to create it.
	env := envFor(dbtest.MissingURL(t) + "&pool_max_conns=6&pool_max_conn_idle_time=1m")
	out, err := runCmd(t, env, "", "user", "list")
	if err != nil {
		t.Fatalf("a command with pool settings in DATABASE_URL: %v\n%s", err, out)
	}
	s := serve(t, env)
	if s.base == "" {
		t.Fatal("serve with pool settings in DATABASE_URL did not serve")
	}
}

func TestReadmeStatesThePoolDefault(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("pool of at most %d connections", store.DefaultMaxConns); !strings.Contains(string(readme), want) {
		t.Fatalf("README.md does not say %q", want)
	}
}
