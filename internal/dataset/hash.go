package dataset

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// hashVersion starts every hashed encoding, so that a change of encoding
// can never be mistaken for a change of content.
const hashVersion = "attune-dataset-item-v1\n"

// Hash returns the hash Item.SHA256 holds for a dialogue: the lower-case
// hex SHA-256 of a canonical encoding of the messages and meta. The
// encoding is hashVersion, the number of messages as a uvarint, then for
// each message its role and its content, and last the canonical meta (see
// Item.Meta), each of those preceded by its length in bytes as a uvarint.
// Lengths make it unambiguous without escaping anything.
//
// meta is any JSON object text, nil or empty meaning {}; Hash returns an
// error if it is anything else. The store compares hashes to tell a
// re-imported item that is unchanged from one whose content changed.
func Hash(messages []Message, meta json.RawMessage) (string, error) {
	rd := &reader{}
	canon := []byte("{}")
	if len(meta) > 0 {
		s := scanner{b: meta, rd: rd}
		s.ws()
		if s.peek() != '{' {
			return "", fmt.Errorf("dataset: hash: meta is %s, not an object", typeName(s.peek()))
		}
		var err error
		s.deepest = maxMetaDepth
		canon, err = s.canon(nil, 1)
		if err == nil {
			if s.ws(); s.i != len(s.b) {
				err = errSyntax
			}
		}
		if err != nil {
			return "", fmt.Errorf("dataset: hash: meta: %s", jsonError(meta))
		}
		if s.problem != nil {
			return "", fmt.Errorf("dataset: hash: meta: %w", s.problem)
		}
	}
	return rd.hash(messages, canon), nil
}

// hash returns the hex SHA-256 of the canonical encoding of messages and
// meta, which must already be canonical.
func (rd *reader) hash(messages []Message, meta []byte) string {
	rd.hashStart(len(messages))
	for _, m := range messages {
		rd.tmp = append(rd.tmp[:0], m.Content...)
		rd.hashMessage(m.Role, rd.tmp)
	}
	return rd.hashEnd(meta)
}

// hashStart, hashMessage and hashEnd compute what hash computes, taking
// the content as bytes: the JSONL reader hashes the decoded text before it
// becomes a string, without copying it.
func (rd *reader) hashStart(messages int) {
	if rd.sha == nil {
		rd.sha = sha256.New()
	}
	rd.sha.Reset()
	b := append(rd.canon[:0], hashVersion...)
	rd.canon = binary.AppendUvarint(b, uint64(messages))
}

func (rd *reader) hashMessage(role string, content []byte) {
	b := binary.AppendUvarint(rd.canon, uint64(len(role)))
	b = append(b, role...)
	b = binary.AppendUvarint(b, uint64(len(content)))
	rd.sha.Write(b)
	rd.sha.Write(content)
	rd.canon = b[:0]
}

func (rd *reader) hashEnd(meta []byte) string {
	b := binary.AppendUvarint(rd.canon, uint64(len(meta)))
	b = append(b, meta...)
	rd.sha.Write(b)
	rd.canon = b[:0]
	rd.hexBuf = hex.AppendEncode(rd.hexBuf[:0], rd.sha.Sum(rd.digest[:0]))
	return string(rd.hexBuf)
}
