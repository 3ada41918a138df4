package rubric

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrChanged is returned (wrapped) by CheckHash when a definition differs
// from the one already stored under its key@version.
var ErrChanged = errors.New("rubric: definition changed under an existing version")

// Canonical returns the definition as canonical JSON: fields in a fixed
// order, empty fields left out, no insignificant space. Equal definitions
// give equal bytes on every machine, whatever the layout, comments or key
// order of the file they came from; Parse reads the canonical form back to
// an equal definition.
func (d *Definition) Canonical() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Rubric text is full of < and >; keep it readable where it is stored.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		// Only unsupported floats (NaN, ±Inf) fail, and Parse refuses them.
		panic(fmt.Sprintf("rubric: canonical %s: %v", d.Ref(), err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Hash returns the lower-case hex SHA-256 of Canonical. Loading stores it
// with the version, so that loading again is a no-op and a changed file is
// caught by CheckHash.
func (d *Definition) Hash() string {
	sum := sha256.Sum256(d.Canonical())
	return hex.EncodeToString(sum[:])
}

// CheckHash compares the definition with the hash stored for its
// key@version. It returns nil when they match and otherwise an error
// wrapping ErrChanged that tells the person to give the changed definition
// a new version: a version never changes once labels point at it.
func (d *Definition) CheckHash(stored string) error {
	if h := d.Hash(); h != stored {
		return fmt.Errorf("%w: %s differs from the stored %s (hash %.12s, stored %.12s); a version never changes once labels point at it: give the changed file a new version",
			ErrChanged, d.Ref(), d.Ref(), h, stored)
	}
	return nil
}
