package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/fakellm"
)

const cliKey = "sk-cli-test-key-not-for-output"

func TestJudgeCommands(t *testing.T) {
	t.Parallel()
	fake := httptest.NewServer(fakellm.New(fakellm.Options{APIKey: cliKey}))
	defer fake.Close()
	// The admin allows the key variables these judges name and the fake
	// model on this machine.
	env := envFor(dbtest.NewURL(t), "JUDGE_KEY", cliKey, "ATTUNE_JUDGE_KEY_ENVS", "JUDGE_KEY,NOT_SET_ANYWHERE", "ATTUNE_JUDGE_HOSTS", "127.0.0.1")
	var logs strings.Builder
	cmd := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(t.Context(), args, env, strings.NewReader(""), &out, &logs)
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := cmd(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	must("project", "create", "--name", "P", "--rubric", "empathetic-understanding@1", "--overlap", "1")
	dir := t.TempDir()
	data := filepath.Join(dir, "d.jsonl")
	os.WriteFile(data, []byte(`{"id":"a","messages":[{"role":"user","content":"I failed my driving test."},{"role":"assistant","content":"That's disappointing after all the practice. How do you feel?"}]}
{"id":"b","messages":[{"role":"user","content":"My friend ignored me."},{"role":"assistant","content":"Maybe they were busy."}]}
`), 0o644)
	must("import", "--project", "P", data)

	// A key pasted where the variable's name belongs is refused, and not echoed.
	_, err := cmd("judge", "add", "--name", "J", "--base-url", fake.URL+"/v1", "--model", "m", "--api-key-env", cliKey)
	if err == nil || strings.Contains(err.Error(), cliKey) {
		t.Fatalf("a key given as --api-key-env: %v", err)
	}
	must("judge", "add", "--name", "J", "--base-url", fake.URL+"/v1", "--model", "m", "--api-key-env", "JUDGE_KEY",
		"--concurrency", "2", "--logprobs", "--price-input", "1", "--price-output", "2")
	if out := must("judge", "list"); !strings.Contains(out, "JUDGE_KEY") || strings.Contains(out, cliKey) {
		t.Fatalf("judge list: %s", out)
	}
	out := must("judge", "run", "--project", "P", "--judge", "J", "--wait")
	runID := strings.TrimSpace(strings.Split(out, "\n")[0])
	if !strings.Contains(out, "completed") {
		t.Fatalf("judge run --wait: %s", out)
	}
	var st runStatusJSON
	if err := json.Unmarshal([]byte(must("judge", "status", runID, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "completed" || st.ItemsDone != 2 || st.Labels != 2 || st.Calls != 2 || st.CostUSD <= 0 || st.EstimateUSD <= 0 {
		t.Fatalf("status = %+v", st)
	}
	if _, err := cmd("judge", "resume", runID); err == nil {
		t.Fatal("a completed run was resumed")
	}
	if strings.Contains(logs.String(), cliKey) {
		t.Fatal("the API key reached the command's output")
	}

	// A judge whose key variable is unset: the run pauses with the reason.
	must("judge", "add", "--name", "K", "--base-url", fake.URL+"/v1", "--model", "m", "--api-key-env", "NOT_SET_ANYWHERE")
	_, err = cmd("judge", "run", "--project", "P", "--judge", "K", "--wait")
	if err == nil || !strings.Contains(err.Error(), "NOT_SET_ANYWHERE") {
		t.Fatalf("run with an unset key: %v", err)
	}
}

func TestFakeLLMCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"fake-llm", "--addr", "127.0.0.1:0"}, envFor(""), strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url := strings.Fields(strings.TrimPrefix(line, "fake LLM serving at "))[0]
	resp, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"Rate 1-5. Evaluation Form (return score ONLY):"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body.Choices) != 1 || len(strings.TrimSpace(body.Choices[0].Message.Content)) != 1 {
		t.Fatalf("fake answer: %d %+v", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
}
