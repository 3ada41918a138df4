// Package static holds attune's stylesheets and scripts, embedded in the
// binary. URLs carry a hash of the file's content, so browsers may cache a
// file for a year and still never see a stale one after an upgrade.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sync"
)

//go:embed css img js
var files embed.FS

// FS is the embedded file tree, rooted at this directory (css/…, img/…, js/…).
var FS fs.FS = files

// hashes maps each file name to the first bytes of its content's SHA-256,
// computed once on first use.
var hashes = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m[p] = hex.EncodeToString(sum[:6])
		return nil
	})
	return m
})

// URL returns the cache-busting URL of the named file, such as
// "/static/css/app.css?v=1a2b3c4d5e6f". It panics on a name that is not
// embedded: that is a programming error a test catches.
func URL(name string) string {
	h, ok := hashes()[name]
	if !ok {
		panic("static: no file " + name)
	}
	return "/static/" + name + "?v=" + h
}

// Hash returns the content hash of the named file and whether it exists.
func Hash(name string) (string, bool) {
	h, ok := hashes()[name]
	return h, ok
}
