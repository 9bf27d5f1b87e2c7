package dbpubsub

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRetryDeadlock(t *testing.T) {
	deadlock := fmt.Errorf("settle: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
	other := &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}
	for _, c := range []struct {
		name      string
		errs      []error // what each run returns, the last one again after
		wantRuns  int
		wantError error
	}{
		{"succeeds at once", []error{nil}, 1, nil},
		{"succeeds after a deadlock", []error{deadlock, nil}, 2, nil},
		{"another error is not retried", []error{other}, 1, other},
		{"deadlocks every time", []error{deadlock}, settleDeadlockTries, deadlock},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := 0
			err := retryDeadlock(func() error {
				runs++
				return c.errs[min(runs, len(c.errs))-1]
			})
			if runs != c.wantRuns || !errors.Is(err, c.wantError) {
				t.Errorf("%d runs, error %v; want %d runs, error %v", runs, err, c.wantRuns, c.wantError)
			}
		})
	}
}
