package judge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/egress"
)

// checkPolicy refuses, before any call, a judge whose key variable or
// base URL the admin's policy does not allow: a judge stored before the
// policy was tightened (or written to the database by other means) is held
// to it all the same. The key is not read.
func checkPolicy(p attune.JudgePolicy, j *attune.Judge) error {
	if j.APIKeyEnv != "" && !p.AllowsKeyEnv(j.APIKeyEnv) {
		return &FatalError{Reason: fmt.Sprintf("the key variable %s is not one an admin allows for judges (ATTUNE_JUDGE_KEY_ENVS); no call was made", j.APIKeyEnv)}
	}
	if msg := p.CheckBaseURL(j.BaseURL); msg != "" {
		return &FatalError{Reason: "the base URL is not allowed: " + msg + " No call was made."}
	}
	return nil
}

// errAddressRefused is what the dialer's error wraps for a host none of
// whose addresses the policy allows.
var errAddressRefused = egress.ErrRefused

// guardedClient returns the HTTP client of judge calls: pooled connections
// (dozens of calls to one endpoint at once) over the egress dialer, which
// connects only to addresses the policy allows. A refusal is a
// *FatalError: no retry can change it.
func guardedClient(p attune.JudgePolicy) *http.Client {
	t := egress.Transport(p)
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 1024
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		var refused *egress.RefusedError
		if errors.As(err, &refused) {
			return nil, &FatalError{err: err, Reason: fmt.Sprintf(
				"%s resolves only to addresses judges may not call (this machine, a private network or link-local); an admin can allow it in ATTUNE_JUDGE_HOSTS", refused.Host)}
		}
		return c, err
	}
	return &http.Client{Transport: t}
}
