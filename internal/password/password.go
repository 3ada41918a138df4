// Package password hashes and checks passwords with argon2id, the
// memory-hard function OWASP recommends, in the PHC string format so that
// parameters can be raised later without invalidating stored hashes.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's cost parameters.
type Params struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// Default follows OWASP's minimum for argon2id (19 MiB, 2 passes, 1 lane):
// about 30 ms a hash on a small server, so that hundreds of sign-ins a
// minute stay cheap while offline guessing stays expensive.
var Default = Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// MinLength is the shortest password accepted.
	MinLength = 10
	// MaxLength bounds the work an attacker can ask of the server per attempt.
	MaxLength = 256
)

// ErrMalformedHash is returned by Verify for a stored hash it cannot read.
var ErrMalformedHash = errors.New("password: malformed hash")

// Check returns a message fit to show when pw is not acceptable as a new
// password, or "" when it is.
func Check(pw string) string {
	n := utf8.RuneCountInString(pw)
	switch {
	case n < MinLength:
		return fmt.Sprintf("must be at least %d characters", MinLength)
	case len(pw) > MaxLength:
		return fmt.Sprintf("must be at most %d bytes", MaxLength)
	}
	return ""
}

// Hash returns the PHC-format argon2id hash of pw with a fresh random salt.
func Hash(pw string, p Params) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether pw matches the stored hash, in constant time with
// respect to the key. It returns ErrMalformedHash for a hash it cannot read.
// It computes at once, however many other computations run: a server
// checks passwords through a Hasher instead.
func Verify(hash, pw string) (bool, error) {
	if len(pw) > MaxLength {
		return false, nil
	}
	ph, err := parse(hash)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(pw), ph.salt, ph.params.Time, ph.params.MemoryKiB, ph.params.Threads, uint32(len(ph.key)))
	return subtle.ConstantTimeCompare(got, ph.key) == 1, nil
}

// parsedHash is a stored hash taken apart.
type parsedHash struct {
	params    Params
	salt, key []byte
}

// parse reads a PHC-format argon2id hash, or returns ErrMalformedHash.
func parse(hash string) (parsedHash, error) {
	var ph parsedHash
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return ph, ErrMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return ph, ErrMalformedHash
	}
	p := &ph.params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil || p.Time == 0 || p.Threads == 0 {
		return ph, ErrMalformedHash
	}
	b64 := base64.RawStdEncoding
	var err error
	if ph.salt, err = b64.DecodeString(parts[4]); err != nil {
		return ph, ErrMalformedHash
	}
	if ph.key, err = b64.DecodeString(parts[5]); err != nil || len(ph.key) == 0 {
		return ph, ErrMalformedHash
	}
	return ph, nil
}

// Generate returns a new random password of 20 base32 characters (100
// bits), grouped in fives for reading aloud: xxxxx-xxxxx-xxxxx-xxxxx.
func Generate() string {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		panic("password: no randomness: " + err.Error())
	}
	s := strings.ToLower(base32.StdEncoding.EncodeToString(b))
	return s[0:5] + "-" + s[5:10] + "-" + s[10:15] + "-" + s[15:20]
}
