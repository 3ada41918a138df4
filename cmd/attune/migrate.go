package main

import (
	"context"
	"fmt"

	"github.com/attune/attune/internal/config"
	"github.com/attune/attune/internal/store"
)

func runMigrate(ctx context.Context, e env, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: migrate takes one of up, down, status", errUsage)
	}
	cfg, err := config.Load(e.getenv)
	if err != nil {
		return err
	}
	if args[0] == "up" {
		if _, err := store.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
			return err
		}
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "up":
		if err := db.Migrate(ctx, e.stdout); err != nil {
			return err
		}
		st, err := db.MigrationState(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "schema at version %d\n", st.Current)
		return nil
	case "down":
		return db.MigrateDown(ctx, e.stdout)
	case "status":
		return db.WriteMigrationStatus(ctx, e.stdout)
	}
	return fmt.Errorf("%w: migrate takes one of up, down, status, not %q", errUsage, args[0])
}
