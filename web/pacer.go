package web

import (
	"time"

	"github.com/attune/attune/web/account"
)

// The sign-in pacer is web/account's; the server makes the one it hands
// that package, and these names are what server.go makes it by.
type pacer = account.Pacer

func newPacer(every time.Duration) *pacer { return account.NewPacer(every) }
