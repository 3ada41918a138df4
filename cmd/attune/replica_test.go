package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/pgcluster"
)

// replicaClient is a lead signed in to the pages and an annotator's
// token, against one served attune.
type replicaClient struct {
	t     *testing.T
	base  string
	lead  *http.Client
	token string
}

// get fetches a page as the lead: status, body and the header saying where
// a download was read.
func (c *replicaClient) get(path string) (int, string, string) {
	c.t.Helper()
	resp, err := c.lead.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("Attune-Read-From")
}

// label has the annotator label the next item through the API.
func (c *replicaClient) label(projectID int64) {
	c.t.Helper()
	call := func(path string, body any) map[string]any {
		c.t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
			c.t.Fatalf("%s: %d %v %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	next := call(fmt.Sprintf("/api/v1/projects/%d/next", projectID), nil)
	asg := next["assignment"].(map[string]any)["id"].(float64)
	call(fmt.Sprintf("/api/v1/assignments/%.0f/labels", asg), map[string]any{"answers": map[string]string{
		"emotion": "4", "validation": "4", "helpfulness": "3", "safety": "3", "overall": "4"}})
}

// eventually fetches path until ok holds for what it got, for up to 60 s:
// what the primary wrote reaches the standby a moment later.
func (c *replicaClient) eventually(path string, ok func(status int, body, readFrom string) bool) (string, string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, body, readFrom := c.get(path)
		if ok(status, body, readFrom) {
			return body, readFrom
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s never showed what was expected: %d, read from %q\n%.2000s", path, status, readFrom, body)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// TestHeavyReadsOnAReplica runs attune with ATTUNE_REPLICA_URL set to a
// real streaming standby. A label submitted on the primary shows up in the
// report, the items search and the exports read from the replica, whose
// pages say it is up to date; with the standby's replay paused they show
// how far behind it is and not the newer label; with the standby killed
// they read the primary, say so, and show it.
func TestHeavyReadsOnAReplica(t *testing.T) {
	t.Parallel()
	primary := pgcluster.NewPrimary(t, pgcluster.Options{})
	standby := primary.NewStandby(t, "replica")
	h := newHAProject(t, primary.URL("attune"), 3, 1, 0)
	s := serve(t, envFor(primary.URL("attune"), append(h.env, "ATTUNE_REPLICA_URL", standby.URL("attune"), "ATTUNE_REPLICA_MAX_LAG", "10m",
		"ATTUNE_ADMIN_EMAIL", "lead@example.org", "ATTUNE_ADMIN_PASSWORD", "a-lead-password")...))
	jar, _ := cookiejar.New(nil)
	c := &replicaClient{t: t, base: s.base, lead: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, token: h.tokens[0]}
	req, _ := http.NewRequest(http.MethodPost, s.base+"/login", strings.NewReader(url.Values{"email": {"lead@example.org"}, "password": {"a-lead-password"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.base)
	resp, err := c.lead.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}

	c.label(h.p.ID)
	id := h.p.ID
	report := fmt.Sprintf("/projects/%d/report", id)
	upToDate := "Read from the replica, which is up to date."
	c.eventually(report, func(status int, body, _ string) bool {
		return status == http.StatusOK && strings.Contains(body, "Ann 0") && strings.Contains(body, upToDate)
	})
	c.eventually(fmt.Sprintf("/projects/%d/browse?q=flatmate", id), func(status int, body, _ string) bool {
		return status == http.StatusOK && strings.Contains(body, "ha0") && strings.Contains(body, upToDate)
	})
	for _, path := range []string{fmt.Sprintf("/projects/%d/exports/labels.csv", id), fmt.Sprintf("/projects/%d/exports/dataset.jsonl?which=labels", id)} {
		c.eventually(path, func(status int, body, readFrom string) bool {
			return status == http.StatusOK && strings.Contains(body, "ann0@example.org") && readFrom == upToDate
		})
	}

	// Paused, the standby falls behind: the pages say by how much, and
	// the label written since is not in what they read.
	standby.Query(t, "attune", `SELECT pg_wal_replay_pause()::text`)
	before := strings.Count(mustGet(c, fmt.Sprintf("/projects/%d/exports/labels.csv", id)), "ann0@example.org")
	c.label(id)
	body, _ := c.eventually(report, func(status int, body, _ string) bool {
		return status == http.StatusOK && strings.Contains(body, "Read from the replica: data as of ")
	})
	if !strings.Contains(body, "ago at most.") {
		t.Errorf("the lag line: %s", between(body, "read-from"))
	}
	_, csv, readFrom := c.get(fmt.Sprintf("/projects/%d/exports/labels.csv", id))
	if n := strings.Count(csv, "ann0@example.org"); n != before || !strings.HasPrefix(readFrom, "Read from the replica: data as of ") {
		t.Errorf("behind, the export has %d of the annotator's labels (%d before the new one), read from %q", n, before, readFrom)
	}

	// Down, the primary is read, with the newer label.
	standby.Kill()
	_, readFrom = c.eventually(fmt.Sprintf("/projects/%d/exports/labels.csv", id), func(status int, body, _ string) bool {
		return status == http.StatusOK && strings.Count(body, "ann0@example.org") > before
	})
	if readFrom != "Read from the primary: the replica does not answer." {
		t.Errorf("with the replica down, read from %q", readFrom)
	}
	c.eventually(report, func(status int, body, _ string) bool {
		return status == http.StatusOK && strings.Contains(body, "Read from the primary: the replica does not answer.")
	})
}

func mustGet(c *replicaClient, path string) string {
	c.t.Helper()
	status, body, _ := c.get(path)
	if status != http.StatusOK {
		c.t.Fatalf("%s: %d %.400s", path, status, body)
	}
	return body
}

// between is the part of a page around a test id, for a failure message.
func between(body, testid string) string {
	i := strings.Index(body, `data-testid="`+testid+`"`)
	if i < 0 {
		return "(no " + testid + ")"
	}
	return body[i:min(len(body), i+200)]
}
