package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means that the database could not be
// reached or went away while the statement ran: the server was killed,
// is restarting, is a standby that refuses writes, or a failover is under
// way. Such a request may succeed when it is sent again; the caller
// should say so (a 503) rather than report a fault. Whether a write that
// failed this way was stored is not known, so only requests that are safe
// to repeat (attune's submissions are) may be repeated blindly.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection_exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		case pgErr.Code == "25006": // read_only_sql_transaction: a standby, or a primary demoted
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
