package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

// TestEvidenceSchema: a label's turn evidence defaults to none, the
// database refuses a turn below 1, and a project takes evidence
// optionally unless set otherwise, with only the three settings allowed.
func TestEvidenceSchema(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	var labelDefault, policyDefault, policyCheck, evidenceCheck string
	if err := db.Pool().QueryRow(ctx, `
		SELECT (SELECT column_default FROM information_schema.columns WHERE table_name = 'labels' AND column_name = 'evidence'),
		       (SELECT column_default FROM information_schema.columns WHERE table_name = 'projects' AND column_name = 'evidence_policy'),
		       (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'projects'::regclass AND conname LIKE '%evidence_policy%'),
		       (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'labels'::regclass AND conname LIKE '%evidence%')`).
		Scan(&labelDefault, &policyDefault, &policyCheck, &evidenceCheck); err != nil {
		t.Fatal(err)
	}
	if labelDefault != "'{}'::integer[]" || policyDefault != "'optional'::text" {
		t.Errorf("defaults = %q, %q; want no turns and optional", labelDefault, policyDefault)
	}
	for _, w := range []string{"off", "optional", "required"} {
		if !strings.Contains(policyCheck, w) {
			t.Errorf("evidence_policy check %q does not allow %q", policyCheck, w)
		}
	}
	if !strings.Contains(evidenceCheck, "0 < ALL") {
		t.Errorf("labels evidence check = %q, want turns from 1", evidenceCheck)
	}
}
