package sqlitepubsub

import (
	"context"

	"github.com/conveyorgo/conveyor/pubsub/driver"
)

var _ driver.Pauser = (*subscription)(nil)

// Pause pauses the subscription for every process on the file: a row of
// conveyor_pauses, which the claim checks. Consumers of other processes
// hold from their next claim.
func (u *subscription) Pause(ctx context.Context) error {
	return u.s.write(ctx, func(ctx context.Context) error {
		_, err := u.s.sqldb.ExecContext(ctx, `INSERT INTO conveyor_pauses (topic, sub) VALUES (?, ?) ON CONFLICT DO NOTHING`, u.topic, u.name)
		return err
	})
}

// Resume resumes the subscription and wakes this process's consumers;
// those of other processes find its messages by polling.
func (u *subscription) Resume(ctx context.Context) error {
	err := u.s.write(ctx, func(ctx context.Context) error {
		_, err := u.s.sqldb.ExecContext(ctx, `DELETE FROM conveyor_pauses WHERE topic = ? AND sub = ?`, u.topic, u.name)
		return err
	})
	if err == nil {
		u.s.notify()
	}
	return err
}

// Paused reports whether the subscription is paused.
func (u *subscription) Paused(ctx context.Context) (bool, error) {
	var n int
	err := u.s.read(ctx, func(ctx context.Context) error {
		return u.s.sqldb.QueryRowContext(ctx, `SELECT count(*) FROM conveyor_pauses WHERE topic = ? AND sub = ?`, u.topic, u.name).Scan(&n)
	})
	return n > 0, err
}
