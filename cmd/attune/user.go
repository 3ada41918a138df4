package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/store"
)

func userFlagsHelp(fs *flag.FlagSet) {
	fs.String("email", "", "the account's email (add, set-role, set-password, disable, enable, unlock)")
	fs.String("role", "", "admin, lead or annotator (add, set-role)")
	fs.String("name", "", "display name (add)")
	fs.Bool("password-stdin", false, "read the password from the first line of standard input (add, set-password); without it, add generates one and prints it once")
	fs.Bool("revoke-tokens", false, "also revoke every API token of the account (set-password); without it, its tokens keep working")
	fs.Bool("json", false, "print JSON (list)")
}

// tokensOutcome says what a password reset did to the account's API
// tokens, and how to revoke the ones it kept.
func tokensOutcome(done store.PasswordChanged, email string) string {
	kept := fmt.Sprintf("%d still work", done.TokensKept)
	if done.TokensKept == 1 {
		kept = "1 still works"
	}
	switch {
	case done.TokensRevoked > 0:
		return fmt.Sprintf("%d revoked", done.TokensRevoked)
	case done.TokensKept == 0:
		return "the account has none"
	}
	return kept + " (kept: `attune token list --email " + email + "`, then `attune token revoke`, or reset again with --revoke-tokens)"
}

func runUser(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: user takes add, list, set-role, set-password, disable, enable or unlock", errUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("user "+verb, flag.ContinueOnError)
	userFlagsHelp(fs)
	if err := parseFlags(fs, e, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	need := func(names ...string) error {
		for _, n := range names {
			if strings.TrimSpace(get(n)) == "" {
				return fmt.Errorf("%w: user %s needs --%s", errUsage, verb, n)
			}
		}
		return nil
	}
	switch verb {
	case "add", "list", "set-role", "set-password", "disable", "enable", "unlock":
	default:
		return fmt.Errorf("%w: unknown user command %q", errUsage, verb)
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()

	findUser := func() (*attune.User, error) {
		email, err := attune.NormalizeEmail(get("email"))
		if err != nil {
			return nil, err
		}
		u, err := db.FindUserByEmail(ctx, email)
		if errors.Is(err, attune.ErrNotFound) {
			return nil, fmt.Errorf("no account has the email %s", email)
		}
		return u, err
	}
	readPassword := func() (string, error) {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("--password-stdin: nothing on standard input")
		}
		pw := strings.TrimRight(line, "\r\n")
		if msg := password.Check(pw); msg != "" {
			return "", fmt.Errorf("the password %s", msg)
		}
		return pw, nil
	}

	switch verb {
	case "add":
		if err := need("email", "role"); err != nil {
			return err
		}
		email, err := attune.NormalizeEmail(get("email"))
		if err != nil {
			return err
		}
		role, err := attune.ParseRole(get("role"))
		if err != nil {
			return err
		}
		var pw string
		generated := get("password-stdin") != "true"
		if generated {
			pw = password.Generate()
		} else if pw, err = readPassword(); err != nil {
			return err
		}
		hash, err := password.Hash(pw, password.Default)
		if err != nil {
			return err
		}
		u, err := db.CreateUser(ctx, nil, store.NewUser{Email: email, Name: strings.TrimSpace(get("name")), Role: role, PasswordHash: hash})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "added %s as %s\n", u.Email, u.Role)
		if generated {
			fmt.Fprintf(e.stdout, "password: %s (shown only once)\n", pw)
		}
	case "list":
		users, err := db.ListUsers(ctx)
		if err != nil {
			return err
		}
		if get("json") == "true" {
			type row struct {
				Email    string `json:"email"`
				Name     string `json:"name"`
				Role     string `json:"role"`
				Disabled bool   `json:"disabled"`
				Created  string `json:"created"`
			}
			out := []row{}
			for _, u := range users {
				out = append(out, row{u.Email, u.Name, string(u.Role), u.Disabled(), u.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EMAIL\tNAME\tROLE\tSTATUS")
		for _, u := range users {
			status := "active"
			if u.Disabled() {
				status = "disabled"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Email, u.Name, u.Role, status)
		}
		return tw.Flush()
	case "set-role":
		if err := need("email", "role"); err != nil {
			return err
		}
		role, err := attune.ParseRole(get("role"))
		if err != nil {
			return err
		}
		u, err := findUser()
		if err != nil {
			return err
		}
		ended, err := db.SetUserRole(ctx, nil, u.ID, role)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s is now %s\n", u.Email, role)
		if ended > 0 {
			fmt.Fprintf(e.stdout, "  no longer leads %d project(s): an annotator there now\n", ended)
		}
	case "set-password":
		if err := need("email"); err != nil {
			return err
		}
		if get("password-stdin") != "true" {
			return fmt.Errorf("%w: user set-password needs --password-stdin", errUsage)
		}
		u, err := findUser()
		if err != nil {
			return err
		}
		pw, err := readPassword()
		if err != nil {
			return err
		}
		hash, err := password.Hash(pw, password.Default)
		if err != nil {
			return err
		}
		done, err := db.SetUserPassword(ctx, nil, u.ID, store.PasswordChange{
			Hash: hash, RevokeTokens: get("revoke-tokens") == "true"})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "password of %s changed\n", u.Email)
		fmt.Fprintln(e.stdout, "  sessions:   every browser session of the account has ended")
		fmt.Fprintf(e.stdout, "  sign-in:    lockout cleared (%d failed sign-ins forgiven)\n", done.LockoutCleared)
		fmt.Fprintf(e.stdout, "  API tokens: %s\n", tokensOutcome(done, u.Email))
	case "unlock":
		// Forgives the failed sign-ins that lock the account, so that its
		// owner can sign in at once with the password they have.
		if err := need("email"); err != nil {
			return err
		}
		u, err := findUser()
		if err != nil {
			return err
		}
		n, err := db.ClearSignInLock(ctx, nil, u.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "sign-in lock of %s cleared (%d failed sign-ins forgiven)\n", u.Email, n)
	case "disable", "enable":
		if err := need("email"); err != nil {
			return err
		}
		u, err := findUser()
		if err != nil {
			return err
		}
		if err := db.SetUserDisabled(ctx, nil, u.ID, verb == "disable"); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s %sd\n", u.Email, verb)
	}
	return nil
}
