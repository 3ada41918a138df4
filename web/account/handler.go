// Package account serves signing in and out, the user's own account and
// API tokens, and the admins' users page.
package account

import (
	"net/netip"

	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
)

// Handler serves signing in and out, the user's own account and API
// tokens, and the admins' users.
type Handler struct {
	*kit.Kit
	// hasher computes every password hash, a bounded number at a time; it
	// is the server's one, shared with whatever else hashes.
	hasher *password.Hasher
	// pace spaces the failed sign-ins of addresses over their limit. It is
	// the server's, so that it lasts as long as the server does.
	pace *Pacer
	// limits are the sign-in limits, for sign-in, a change of password
	// and the lockouts the users page shows.
	limits store.SignInLimits
	// trustedProxies are the proxies whose X-Forwarded-For is believed
	// (see clientAddress).
	trustedProxies []netip.Prefix
}

// New returns the handler of signing in, accounts and users, hashing with
// hasher, pacing failures with pace, under the sign-in limits, and counting
// sign-ins by the client address that trustedProxies vouch for.
func New(k *kit.Kit, hasher *password.Hasher, pace *Pacer, limits store.SignInLimits, trustedProxies []netip.Prefix) *Handler {
	return &Handler{Kit: k, hasher: hasher, pace: pace, limits: limits, trustedProxies: trustedProxies}
}
