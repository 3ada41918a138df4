// Package dataset reads and checks the dialogue files a lead imports into a
// project: JSONL in the chat-messages shape ({"id", "messages": [{"role",
// "content"}], "meta"}), the same with "turns": [{"role", "text"}], the
// single-reply shape {"id", "user", "response", "meta"}, and CSV with the
// header id,user,response for single replies. Other top-level fields (a
// source, a model name) are kept under meta, as if they had been put there.
//
// # Streaming and the caller's contract
//
// Read parses a file line by line (JSONL) or record by record (CSV), checks
// every item and hands checked items to a callback in batches, so memory is
// bounded by one batch, one line and the set of ids seen (needed to find an
// id repeated in the file), never by the file. A file is accepted only as a
// whole: Read may hand batches to the callback before a later line turns out
// to be broken, so a caller that stores batches as they come must store them
// in one transaction and roll it back when Read returns an error. Once Read
// has found an error it calls the callback no more.
//
// # Irregular dialogues import as they are
//
// Real conversations may open with the assistant, end with the user, give
// one role several messages in a row or carry system messages; Read keeps
// all of that in place. It refuses only what cannot be labelled: missing or
// malformed fields, empty text, an item with no assistant reply, and a
// dialogue that does not fit the project's rubric (a rubric that rates the
// last reply needs a dialogue that ends with one).
//
// # Errors
//
// Every problem is a LineError naming the line (1-based; for CSV the line a
// record starts on) and the field, with a message a person can act on. Read
// keeps going after an error to report many at once and returns them
// together as *Errors.
//
// # Labels files
//
// ReadLabels reads the other file a lead imports: labels made elsewhere,
// as CSV in long form (LabelsHeader), each line checked on its own against
// the project's rubric and named by line and field when it is bad. What
// needs the whole file or the project is the store's to check.
//
// The package imports only the standard library, internal/rubric and the
// text rule of internal/attune (TextProblem), which every path that takes
// text from a file asks. It
// parses JSON with its own scanner rather than encoding/json: the import
// must take well over 100,000 conversations a second, and decoding through
// reflection does not. Messages about broken JSON still come from
// encoding/json, so people read the standard wording.
package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/attune/attune/internal/rubric"
)

// Format is the shape of a dataset file.
type Format string

// The formats Read understands.
const (
	// JSONL is one JSON object per line, with messages or turns.
	JSONL Format = "jsonl"
	// CSV is a header id,user,response and one single reply per record.
	CSV Format = "csv"
)

// Kind says whether an item is a single reply or a longer conversation.
type Kind string

// The kinds of item.
const (
	// Reply is a dialogue of exactly one user message followed by one
	// assistant message.
	Reply Kind = "reply"
	// Conversation is any other dialogue.
	Conversation Kind = "conversation"
)

// The roles a message may have. Roles are case-sensitive.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Defaults for the zero fields of Options.
const (
	DefaultBatchSize    = 1000
	DefaultMaxErrors    = 50
	DefaultMaxLineBytes = 1 << 20
	DefaultMaxMetaBytes = 64 << 10
)

// MaxDepth is how deep an item's meta may nest, meta itself counting as
// level 1. The fields given beside the dialogue are kept under meta and
// held to the same limit, as if they had been written inside it; the
// messages hold only strings. Read refuses a line that nests deeper.
const MaxDepth = maxMetaDepth

// Options tune Read. The zero value reads a file of either format with the
// defaults and no rubric check.
type Options struct {
	// Format is JSONL, CSV, or "" to detect it from the first byte that is
	// not blank: '{' is JSONL, anything else CSV.
	Format Format
	// Unit is the unit of the project's rubric. Reply and LastReply need a
	// dialogue that ends with an assistant message (the reply rated);
	// Conversation needs one assistant message somewhere, which every item
	// needs anyway. "" checks no fit to a rubric; any other value makes
	// Read fail before reading.
	Unit rubric.Unit
	// BatchSize is how many items emit receives at most per call (default
	// DefaultBatchSize).
	BatchSize int
	// MaxErrors is how many errors Read lists before it only counts them
	// (default DefaultMaxErrors).
	MaxErrors int
	// MaxLineBytes is the longest JSONL line, or CSV record, Read accepts,
	// in bytes without the line ending (default DefaultMaxLineBytes). Read
	// never holds more than this of one line in memory.
	MaxLineBytes int
	// MaxMetaBytes is the largest meta Read accepts, in bytes of its
	// canonical form with the fields beside the dialogue merged in
	// (default DefaultMaxMetaBytes). Meta is shown and searched with every
	// item; the dialogue's own size is bounded by MaxLineBytes.
	MaxMetaBytes int
}

func (o Options) withDefaults() Options {
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = DefaultMaxErrors
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxMetaBytes <= 0 {
		o.MaxMetaBytes = DefaultMaxMetaBytes
	}
	return o
}

// Message is one message of a dialogue. Role is RoleUser, RoleAssistant or
// RoleSystem; Content is the text exactly as the file gave it (never empty
// or only whitespace).
type Message struct {
	Role    string
	Content string
}

// Item is one checked dialogue, ready to store. Items handed to emit own
// their fields: a caller may keep them after emit returns.
type Item struct {
	// SourceID is the id the file gave, unique within the file; an integer
	// id is its decimal string.
	SourceID string
	Kind     Kind
	// Messages is the dialogue in file order, system messages included.
	// Turns input has the same shape: its text is Content.
	Messages []Message
	// Meta is the item's meta object in canonical compact JSON (keys
	// sorted, no insignificant space), or {} when the file gave none.
	Meta json.RawMessage
	// Turns is CountTurns(Messages).
	Turns int
	// SHA256 is the lower-case hex SHA-256 of the canonical encoding of
	// Messages and Meta (see Hash): the same content written differently
	// hashes the same; any change of text, role, order or meta changes it.
	// The id is not part of it.
	SHA256 string
	// Line is the line the item starts on, counting from 1.
	Line int
}

// Summary describes what Read read, whether or not it returned an error.
type Summary struct {
	// Format is the format read, detected or given.
	Format Format
	// Items is how many items passed every check.
	Items int
	// Lines is how many lines the file has, blank lines included.
	Lines int
}

// LineError is one problem in a file. Line counts from 1 (for CSV it is the
// line the record starts on); Field names the field, such as
// "messages[2].role", or is "" when the problem is the whole line.
type LineError struct {
	Line    int
	Field   string
	Message string
}

// Error returns the problem as one line of text, for example
// `line 7: messages[2].role: unknown role "bot": use user, assistant or system`.
func (e LineError) Error() string {
	if e.Field == "" {
		return "line " + strconv.Itoa(e.Line) + ": " + e.Message
	}
	return "line " + strconv.Itoa(e.Line) + ": " + e.Field + ": " + e.Message
}

// Errors is the error Read returns when a file has problems: the first
// Options.MaxErrors of them in file order, and how many more Read found
// after that. A file that gives Errors must be stored not at all.
type Errors struct {
	List []LineError
	// Cut is how many further errors Read found but did not list.
	Cut int
}

// Error lists the problems one per line, then how many were left out.
func (e *Errors) Error() string {
	var b strings.Builder
	for i, le := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(le.Error())
	}
	if e.Cut > 0 {
		fmt.Fprintf(&b, "\n… and %d more %s (only the first %d are listed)", e.Cut, plural(e.Cut, "error", "errors"), len(e.List))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Read reads a dataset file from r, checks every item and calls emit with
// the checked items in file order, in batches of at most opts.BatchSize.
//
// emit must not keep the batch slice after it returns (Read reuses it); it
// may keep the Items. If emit returns an error, Read stops and returns that
// error unchanged.
//
// When the file has problems Read returns *Errors listing them. It keeps
// reading after a problem so that one run reports many, but it calls emit
// no more once it has found one, and it may already have called emit for
// earlier lines: a caller that stores batches must discard all of them when
// Read returns any error. A file with no items is an error too. An error
// reading r is returned wrapped, at once.
//
// The Summary is filled in as far as Read got, error or not.
func Read(r io.Reader, opts Options, emit func(batch []Item) error) (Summary, error) {
	opts = opts.withDefaults()
	switch opts.Unit {
	case "", rubric.Reply, rubric.LastReply, rubric.Conversation:
	default:
		return Summary{}, fmt.Errorf("dataset: unknown rubric unit %q", opts.Unit)
	}
	switch opts.Format {
	case "", JSONL, CSV:
	default:
		return Summary{}, fmt.Errorf("dataset: unknown format %q: use %q or %q", opts.Format, JSONL, CSV)
	}
	rd := &reader{
		opts: opts,
		emit: emit,
		seen: make(map[string]int),
		br:   bufio.NewReaderSize(r, 64<<10),
	}
	err := rd.run()
	return rd.sum, err
}

// reader is the state of one Read.
type reader struct {
	opts Options
	emit func([]Item) error
	br   *bufio.Reader
	sum  Summary

	batch  []Item
	seen   map[string]int // id → line it first appeared on
	errs   Errors
	failed bool // a problem was found: emit no more

	// Per-line scratch, reused so that a line costs few allocations.
	lineErrs []LineError
	text     []byte // decoded message texts of the current item
	spans    []msg  // where each message's text sits in text
	meta     []byte // canonical meta of the current item
	canon    []byte // canonical encoding hashed
	key      []byte // decoded object key
	id       []byte // decoded id
	val      []byte // decoded role
	long     []byte // a line longer than br's buffer
	members  []member
	tmp      []byte
	sha      hash.Hash
	digest   [32]byte
	hexBuf   []byte
}

func (rd *reader) run() error {
	format, err := rd.detect()
	if err != nil {
		return err
	}
	rd.sum.Format = format
	if what := binaryStart(rd.br); what != "" {
		// Read as text, such a file would list its bytes as columns or
		// lines of garbage; it is no dataset in either format.
		rd.report(LineError{Line: 1, Message: fmt.Sprintf("the file is %s, not text: a dataset is JSON Lines (one JSON object per line) or CSV with a header", what)})
		errs := rd.errs
		return &errs
	}
	if format == CSV {
		err = rd.readCSV()
	} else {
		err = rd.readJSONL()
	}
	if err != nil {
		return err
	}
	if rd.sum.Items == 0 && len(rd.errs.List) == 0 {
		msg := "the file holds no items"
		if format == CSV && rd.sum.Lines > 0 {
			msg = "the file has a header but no records"
		}
		rd.report(LineError{Line: max(rd.sum.Lines, 1), Message: msg})
	}
	if len(rd.errs.List) > 0 {
		errs := rd.errs
		return &errs
	}
	if len(rd.batch) > 0 {
		return rd.flush()
	}
	return nil
}

// detect skips a byte-order mark and decides the format. It consumes
// nothing but the mark, so line numbers stay right.
func (rd *reader) detect() (Format, error) {
	if b, _ := rd.br.Peek(3); len(b) == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		_, _ = rd.br.Discard(3)
	}
	if rd.opts.Format != "" {
		return rd.opts.Format, nil
	}
	for n := 1; n <= rd.br.Size(); n++ {
		b, err := rd.br.Peek(n)
		if len(b) < n {
			if err != nil && err != io.EOF {
				return "", fmt.Errorf("dataset: read: %w", err)
			}
			return JSONL, nil // empty or blank: run reports no items
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return JSONL, nil
		}
		return CSV, nil
	}
	return JSONL, nil // a buffer full of blanks: blank lines are skipped
}

// binaryStart says what the start of the file shows it to be when that is
// not text, and "" for text (see NotText).
func binaryStart(br *bufio.Reader) string {
	b, _ := br.Peek(NotTextPeek)
	return NotText(b)
}

// NotTextPeek is how much of a file's start NotText needs to decide.
const NotTextPeek = 512

// NotText says what a file whose first bytes are b is when it is not text
// — a known archive or document by its signature, or binary data (control
// characters such as NUL make up a tenth of the first NotTextPeek bytes)
// — and "" for text. Text in another encoding than UTF-8 is left to the
// line checks, which name the line. Every upload of text (datasets and
// labels alike) asks it, so a spreadsheet sent by mistake is named as one
// rather than listed as columns of garbage.
func NotText(b []byte) string {
	for _, sig := range []struct {
		magic, what string
	}{
		{"PK\x03\x04", "a ZIP archive (an .xlsx or .docx is one)"},
		{"\x1f\x8b", "gzip-compressed"},
		{"%PDF-", "a PDF document"},
		{"\xd0\xcf\x11\xe0", "an old Office document"},
		{"PAR1", "a Parquet file"},
		{"SQLite format 3\x00", "an SQLite database"},
	} {
		if bytes.HasPrefix(b, []byte(sig.magic)) {
			return sig.what
		}
	}
	// A stray control character in a field is a line's problem, named
	// there; a start full of them is no text at all.
	control := 0
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' {
			control++
		}
	}
	if control >= 3 && control*10 > len(b) {
		return "binary data (its first bytes are control characters, not text)"
	}
	return ""
}

// report records a problem of the file, or only counts it once MaxErrors
// are listed.
func (rd *reader) report(e LineError) {
	rd.failed = true
	// The batch is never stored now: the caller rolls back.
	clear(rd.batch)
	rd.batch = rd.batch[:0]
	if len(rd.errs.List) < rd.opts.MaxErrors {
		rd.errs.List = append(rd.errs.List, e)
		return
	}
	rd.errs.Cut++
}

// add hands a checked item on, emitting a full batch.
func (rd *reader) add(it Item) error {
	rd.sum.Items++
	if rd.failed {
		return nil
	}
	rd.batch = append(rd.batch, it)
	if len(rd.batch) >= rd.opts.BatchSize {
		return rd.flush()
	}
	return nil
}

func (rd *reader) flush() error {
	err := rd.emit(rd.batch)
	clear(rd.batch) // drop references so emitted items can be collected
	rd.batch = rd.batch[:0]
	return err
}

// checkID checks an id as decoded and returns its problem, or "".
func checkID(id []byte) string {
	if len(id) == 0 {
		return "empty; every item needs an id"
	}
	if first, _ := utf8.DecodeRune(id); unicode.IsSpace(first) {
		return fmt.Sprintf("%s starts with whitespace; remove it", quote(id))
	}
	if last, _ := utf8.DecodeLastRune(id); unicode.IsSpace(last) {
		return fmt.Sprintf("%s ends with whitespace; remove it", quote(id))
	}
	if hasNUL(id) {
		return "contains a NUL character (\\u0000), which cannot be stored"
	}
	return ""
}

// checkText checks a message text as decoded and returns its problem, or "".
func checkText(s []byte) string {
	if len(s) == 0 {
		return "empty"
	}
	if blank(s) {
		return "only whitespace"
	}
	if hasNUL(s) {
		return "contains a NUL character (\\u0000), which cannot be stored"
	}
	return ""
}

// blank reports whether s holds only Unicode white space (which includes
// the no-break space).
func blank(s []byte) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != ' ' && (c < '\t' || c > '\r') {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if !unicode.IsSpace(r) {
			return false
		}
		i += n
	}
	return true
}

func hasNUL(s []byte) bool { return bytes.IndexByte(s, 0) >= 0 }

// fitMessage checks a dialogue against the rubric unit and the rule that
// every item has an assistant reply; it returns the problem, or "".
func fitMessage(msgs []Message, unit rubric.Unit) string {
	assistant := false
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			assistant = true
			break
		}
	}
	if !assistant {
		return "no assistant message; an item needs an assistant reply to rate"
	}
	if unit == rubric.Reply || unit == rubric.LastReply {
		if last := msgs[len(msgs)-1].Role; last != RoleAssistant {
			return "the rubric rates the last reply, but this conversation ends with a " + last + " message"
		}
	}
	return ""
}

// kindOf returns Reply for exactly one user message followed by one
// assistant message, else Conversation.
func kindOf(msgs []Message) Kind {
	if len(msgs) == 2 && msgs[0].Role == RoleUser && msgs[1].Role == RoleAssistant {
		return Reply
	}
	return Conversation
}

// CountTurns returns the number of turns in a dialogue, as the rubrics
// define a turn: one user message with the assistant reply to it. System
// messages are ignored; consecutive messages of one role count as one, so a
// run of user messages followed by a run of assistant messages is one turn.
// An assistant message before any user message (a greeting) and user
// messages left without a reply at the end are not turns.
func CountTurns(messages []Message) int {
	turns := 0
	for _, n := range TurnNumbers(messages) {
		turns = max(turns, n)
	}
	return turns
}

// TurnNumbers gives each message the number of the turn it belongs to, by
// CountTurns' definition, from 1: the user run that opens a turn and the
// assistant run that answers it share a number. Messages of no turn (a
// greeting before the first user message, user messages left without a
// reply at the end, system messages) get 0, so that a page numbers exactly
// the turns the rubric counts.
func TurnNumbers(messages []Message) []int {
	nums := make([]int, len(messages))
	turn := 0
	prev := ""
	start := -1 // the first message of the user run waiting for a reply
	for i, m := range messages {
		switch m.Role {
		case RoleUser:
			if prev != RoleUser {
				start = i
			}
			prev = RoleUser
		case RoleAssistant:
			if prev == RoleUser {
				turn++
				for j := start; j < i; j++ {
					if messages[j].Role == RoleUser {
						nums[j] = turn
					}
				}
			}
			if turn > 0 && (prev == RoleUser || prev == RoleAssistant) {
				nums[i] = turn
			}
			prev = RoleAssistant
		}
	}
	return nums
}

// quote quotes a value from the file for a message, shortened so that one
// huge value does not flood the error list.
func quote(b []byte) string {
	const maxRunes = 40
	s := string(b)
	if utf8.RuneCountInString(s) > maxRunes {
		r := []rune(s)
		return strconv.Quote(string(r[:maxRunes])) + "…"
	}
	return strconv.Quote(s)
}

// short returns a literal from the file for a message, shortened.
func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// fieldName returns a key from the file as a field name: bare when it is a
// plain name, quoted otherwise.
func fieldName(key []byte) string {
	if len(key) == 0 || len(key) > 40 {
		return quote(key)
	}
	for _, c := range key {
		if !(c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return quote(key)
		}
	}
	return string(key)
}

// AppendMessagesJSON appends messages to dst as a JSON array of
// {"role", "content"} objects, the shape items are stored in, and returns
// the extended slice. Texts must be valid UTF-8, as Read hands them on.
//
// The layout is the one PostgreSQL's jsonb prints (", " and ": " between
// tokens, "role" before "content", its escapes): items keep this text as
// it is, and the dataset export copies a dialogue in that layout without
// decoding it, so a dialogue imported now reads exactly as one converted
// from jsonb when the column changed type.
func AppendMessagesJSON(dst []byte, messages []Message) []byte {
	dst = append(dst, '[')
	for i, m := range messages {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, `{"role": `...)
		dst = appendStoredString(dst, m.Role)
		dst = append(dst, `, "content": `...)
		dst = appendStoredString(dst, m.Content)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
