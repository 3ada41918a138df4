package store

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/attune/attune/internal/attune"
)

// Lists ordered by a stable key (an id, a name, a version) page by keyset,
// as the lists ordered by time do (timeCursor): a page's cursor names the
// list it was made for and its last row's sort key and id, and the next
// page is the rows after that row in the list's order, so a page costs the
// same however deep it is and a row added or removed between two pages
// neither repeats nor hides another.

// keyCursor is where a page of a list ordered by a stable key ended: the
// list it was made for, the last row's values of the sort columns before
// the unique one (as text), and the last row's value of that unique one.
type keyCursor struct {
	List string   `json:"l"`
	Key  []string `json:"k,omitempty"`
	ID   int64    `json:"i"`
}

// badCursor is the answer to a cursor that was not made for the list it
// is given to, or not made by attune at all.
func badCursor() error {
	return attune.Invalid("cursor", "this cursor does not belong to this list; start from the first page")
}

// checkPageLimit refuses a page size outside 1 to MaxSearchPage, the rule
// of every paged list.
func checkPageLimit(limit int) error {
	if limit < 1 || limit > MaxSearchPage {
		return attune.Invalid("limit", fmt.Sprintf("give a page size from 1 to %d", MaxSearchPage))
	}
	return nil
}

// afterRow reads cursor, made for the list named list, whose order is keys
// text columns (or text expressions) and then a unique bigint one. It
// gives the last row's values as query arguments, the keys then the
// unique value, all nil for the first page (cursor ""), for a condition
//
//	AND ($n::bigint IS NULL OR (key1, …, id) > ($k1, …, $n))
//
// with < for a list in descending order.
func afterRow(cursor, list string, keys int) ([]any, error) {
	args := make([]any, keys+1)
	if cursor == "" {
		return args, nil
	}
	var c keyCursor
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.List != list || len(c.Key) != keys || c.ID <= 0 {
		return nil, badCursor()
	}
	for i, k := range c.Key {
		args[i] = k
	}
	args[keys] = c.ID
	return args, nil
}

// nextRowCursor is the cursor after the row of the list whose sort key is
// key (as afterRow reads it) and unique value id.
func nextRowCursor(list string, id int64, key ...string) string {
	b, _ := json.Marshal(keyCursor{List: list, Key: key, ID: id})
	return base64.RawURLEncoding.EncodeToString(b)
}

// keysetPage cuts the rows a page's query fetched (one more than limit,
// to learn whether a next page exists) to the page, and gives the next
// page's cursor, made by next from the page's last row ("" on the last
// page).
func keysetPage[T any](rows []T, limit int, next func(T) string) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, next(rows[limit-1])
}

// keysetList is one page of a list ordered by a stable key: it checks the
// page size, reads cursor (made for list, with keys sort values before the
// unique one), has fetch read at most n rows after that row (afterRow's
// arguments; n is one more than limit, to learn whether a next page
// exists), and makes the next page's cursor from the last row's unique
// value and sort key, as last gives them.
func keysetList[T any](cursor, list string, keys, limit int, fetch func(after []any, n int) ([]T, error), last func(T) (int64, []string)) ([]T, string, error) {
	if err := checkPageLimit(limit); err != nil {
		return nil, "", err
	}
	after, err := afterRow(cursor, list, keys)
	if err != nil {
		return nil, "", err
	}
	rows, err := fetch(after, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := keysetPage(rows, limit, func(r T) string {
		id, key := last(r)
		return nextRowCursor(list, id, key...)
	})
	return rows, next, nil
}
