package sqlitepubsub_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// appDB opens a file for an app's own tables and a PubSub on it.
func appDB(t *testing.T) (*bun.DB, *sqlitepubsub.PubSub) {
	t.Helper()
	db, err := sqlitepubsub.OpenDB(filepath.Join(t.TempDir(), "app.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if err := ps.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, ps
}

// TestFirstCallInTx: the first call on a new file is an enqueue in the
// app's transaction, which holds the write lock: the tables are made in
// it, and exist once it commits.
func TestFirstCallInTx(t *testing.T) {
	db, err := sqlitepubsub.OpenDB(filepath.Join(t.TempDir(), "app.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ps, err := sqlitepubsub.New(db, sqlitepubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topic := ps.Topic("t")
	for _, commit := range []bool{false, true} {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)`); err != nil {
				return err
			}
			if err := topic.Enqueue(sqlitepubsub.WithTx(ctx, tx), []byte("x")); err != nil {
				return err
			}
			if !commit {
				return errRollback
			}
			return nil
		})
		if commit && err != nil || !commit && !errors.Is(err, errRollback) {
			t.Fatalf("transaction (commit %v): %v", commit, err)
		}
	}
	m, err := topic.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

var errRollback = errors.New("roll back")

// TestEnqueueInTx: an enqueue in the app's transaction (bun.Tx or
// *sql.Tx) exists exactly when the app's writes commit.
func TestEnqueueInTx(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, db *bun.DB, f func(ctx context.Context, tx any, exec func(string) error) error, commit bool) error
	}{
		{"bun.Tx", func(ctx context.Context, db *bun.DB, f func(context.Context, any, func(string) error) error, commit bool) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := f(ctx, tx, func(q string) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
				_ = tx.Rollback()
				return err
			}
			if commit {
				return tx.Commit()
			}
			return tx.Rollback()
		}},
		{"*sql.Tx", func(ctx context.Context, db *bun.DB, f func(context.Context, any, func(string) error) error, commit bool) error {
			tx, err := db.DB.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := f(ctx, tx, func(q string) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
				_ = tx.Rollback()
				return err
			}
			if commit {
				return tx.Commit()
			}
			return tx.Rollback()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, ps := appDB(t)
			ctx := context.Background()
			topic := ps.Topic("orders")
			for i, commit := range []bool{false, true} {
				err := c.run(ctx, db, func(ctx context.Context, tx any, exec func(string) error) error {
					if err := exec(`INSERT INTO orders (id) VALUES (` + string(rune('1'+i)) + `)`); err != nil {
						return err
					}
					tctx := pubsub.WithTx(ctx, tx)
					if err := topic.Enqueue(tctx, []byte{'a' + byte(i)}); err != nil {
						return err
					}
					if err := pubsub.EnqueueBatch(tctx, topic, [][]byte{{'A' + byte(i)}}); err != nil {
						return err
					}
					// Not visible to the PubSub's own connections before
					// the commit.
					st, err := admin.TopicStats(ctx, topic)
					if err != nil {
						return err
					}
					if st.Ready != 0 {
						t.Errorf("%d ready before the commit, want 0", st.Ready)
					}
					return nil
				}, commit)
				if err != nil {
					t.Fatal(err)
				}
			}
			// The rolled-back messages are gone, the committed ones wake a
			// consumer (by polling: nothing tells this process of the commit).
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var got []string
			for range 2 {
				m, err := topic.Dequeue(dctx)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(m.Data()))
				if err := m.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got[0] != "b" || got[1] != "B" {
				t.Fatalf("got %q, want the committed transaction's [b B]", got)
			}
			st, err := admin.TopicStats(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready+st.Processing+st.Scheduled+st.Dead != 0 {
				t.Fatalf("stats %+v after the committed messages, want nothing (the rolled-back ones gone)", st)
			}
			var orders int
			if err := db.QueryRow(`SELECT count(*) FROM orders`).Scan(&orders); err != nil || orders != 1 {
				t.Fatalf("%d orders (%v), want the committed one", orders, err)
			}
		})
	}
}

// TestEnqueueInOtherTx: a transaction on another file, or not a
// transaction of the store, is refused with pubsub.ErrUnsupported and
// nothing is enqueued.
func TestEnqueueInOtherTx(t *testing.T) {
	_, ps := appDB(t)
	other, _ := appDB(t)
	ctx := context.Background()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	topic := ps.Topic("orders")
	err = topic.Enqueue(pubsub.WithTx(ctx, tx), []byte("x"))
	if !errors.Is(err, pubsub.ErrUnsupported) || !errors.Is(err, sqlitepubsub.ErrOtherDatabase) {
		t.Fatalf("Enqueue in a transaction on another file: %v, want ErrUnsupported and ErrOtherDatabase", err)
	}
	t.Logf("other file: %v", err)
	if err := topic.Enqueue(pubsub.WithTx(ctx, "not a tx"), []byte("x")); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Fatalf("Enqueue in a string: %v, want ErrUnsupported", err)
	}
	var sqlTx *sql.Tx = tx.Tx
	if _, _, err := pubsub.Claim(pubsub.WithTx(ctx, sqlTx), topic, "k"); !errors.Is(err, pubsub.ErrUnsupported) {
		t.Fatalf("Claim in a transaction on another file: %v, want ErrUnsupported", err)
	}
	st, err := admin.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != 0 {
		t.Fatalf("%d ready, want nothing enqueued", st.Ready)
	}
}
