package password

import (
	"errors"
	"strings"
	"testing"
)

func TestHashVerify(t *testing.T) {
	t.Parallel()
	h, err := Hash("correct horse battery", Default)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q is not in PHC argon2id form", h)
	}
	if ok, err := Verify(h, "correct horse battery"); !ok || err != nil {
		t.Fatalf("Verify(right) = %v, %v", ok, err)
	}
	if ok, err := Verify(h, "correct horse batterY"); ok || err != nil {
		t.Fatalf("Verify(wrong) = %v, %v", ok, err)
	}
	h2, _ := Hash("correct horse battery", Default)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
}

func TestVerifyMalformed(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=18$m=1,t=1,p=1$AAAA$AAAA",
		"$argon2id$v=19$m=1,t=0,p=1$AAAA$AAAA", "$argon2id$v=19$m=1,t=1,p=1$!!$AAAA", "$argon2id$v=19$m=1,t=1,p=1$AAAA$"} {
		if _, err := Verify(h, "whatever-password"); !errors.Is(err, ErrMalformedHash) {
			t.Errorf("Verify(%q) error = %v, want ErrMalformedHash", h, err)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pw   string
		okay bool
	}{
		{"short", false},
		{"exactly10!", true},
		{"ünïcödé-ok", true},
		{strings.Repeat("x", MaxLength+1), false},
	}
	for _, tt := range tests {
		if got := Check(tt.pw) == ""; got != tt.okay {
			t.Errorf("Check(%q) acceptable = %v, want %v", tt.pw, got, tt.okay)
		}
	}
}
