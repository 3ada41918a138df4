package judge_test

import (
	"net/netip"

	"github.com/attune/attune/internal/attune"
)

// testPolicy is what the runner tests allow: the key variables they name
// (set or not) and the fake models they serve on the loopback address, as
// an admin would allow a local model with ATTUNE_JUDGE_HOSTS=127.0.0.1.
var testPolicy = attune.JudgePolicy{
	KeyEnvs: []string{"ATTUNE_TEST_KEY", "WRONG_KEY", "UNSET_KEY_VAR"},
	Hosts:   []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}},
}
