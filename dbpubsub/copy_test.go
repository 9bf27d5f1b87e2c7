package dbpubsub

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
)

// wantCopyData is the binary COPY data of rows (topic, data), written
// plainly, to check copyReader against.
func wantCopyData(topic string, rows [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("PGCOPY\n\xff\r\n\x00")
	_ = binary.Write(&b, binary.BigEndian, [2]int32{0, 0}) // flags, header extension
	for _, d := range rows {
		_ = binary.Write(&b, binary.BigEndian, int16(2))
		_ = binary.Write(&b, binary.BigEndian, int32(len(topic)))
		b.WriteString(topic)
		_ = binary.Write(&b, binary.BigEndian, int32(len(d)))
		b.Write(d)
	}
	_ = binary.Write(&b, binary.BigEndian, int16(-1))
	return b.Bytes()
}

// copyRowsFixture is a few calls' rows: empty, binary, and one longer than
// the 64 KiB of a network read.
func copyRowsFixture() ([]*enqReq, [][]byte) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80,000 bytes
	group := []*enqReq{
		{data: [][]byte{[]byte("first"), {}, {0, 0xff, '\n', '\\', 0}}},
		{data: [][]byte{big}},
		{data: [][]byte{[]byte("last")}},
	}
	var rows [][]byte
	for _, q := range group {
		rows = append(rows, q.data...)
	}
	return group, rows
}

// appendCopyData gives PostgreSQL's binary COPY format, the rows in the
// order of the calls, after what the buffer held.
func TestAppendCopyData(t *testing.T) {
	group, rows := copyRowsFixture()
	want := append([]byte("kept"), wantCopyData("tópic", rows)...)
	if got := appendCopyData([]byte("kept"), "tópic", group); !bytes.Equal(got, want) {
		t.Fatalf("appendCopyData gave %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// logStatements records, in table statements, the text of every statement
// that adds rows to the ready table of f's topic.
func (f *groupFixture) logStatements() {
	f.exec(`CREATE TABLE statements (id bigserial, query text)`)
	f.exec(`CREATE FUNCTION log_statement() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO statements (query) VALUES (current_query()); RETURN NULL; END $$`)
	f.exec(`CREATE TRIGGER log_statement AFTER INSERT ON ` + f.readyTable() + ` FOR EACH STATEMENT EXECUTE FUNCTION log_statement()`)
}

// statements returns the first word of each statement logged, and forgets
// them.
func (f *groupFixture) statements() []string {
	f.t.Helper()
	rows, err := f.db.DB.QueryContext(f.ctx, `DELETE FROM statements RETURNING id, split_part(ltrim(query), ' ', 1)`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	type st struct {
		id   int64
		word string
	}
	var got []st
	for rows.Next() {
		var s st
		if err := rows.Scan(&s.id, &s.word); err != nil {
			f.t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b st) int { return int(a.id - b.id) })
	words := make([]string, len(got))
	for i, s := range got {
		words[i] = s.word
	}
	return words
}

func numbered(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%03d", prefix, i)
	}
	return out
}

func asStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// A batch of copyMinRows to copyMaxRows rows is added with COPY, a
// smaller or larger one with INSERT; both keep the bytes and the order of
// the rows.
func TestEnqueueBatchCopiesLargeOnes(t *testing.T) {
	f := newGroupFixture(t)
	f.logStatements()
	_, binaryRows := copyRowsFixture()
	large := append(numbered("large", copyMinRows-len(binaryRows)), binaryRows...)
	small := numbered("small", copyMinRows-1)
	most := numbered("most", copyMaxRows)
	huge := numbered("huge", copyMaxRows+1)
	for _, c := range []struct {
		rows [][]byte
		want string
	}{
		{large, "COPY"},
		{small, "INSERT"},
		{most, "COPY"},
		{huge, "INSERT"},
	} {
		if err := f.tp.EnqueueBatch(f.ctx, c.rows); err != nil {
			t.Fatalf("EnqueueBatch of %d: %v", len(c.rows), err)
		}
		if got := f.statements(); !slices.Equal(got, []string{c.want}) {
			t.Errorf("EnqueueBatch of %d rows ran %q, want one %s", len(c.rows), got, c.want)
		}
	}
	all := slices.Concat(large, small, most, huge)
	if got, want := f.rows(), asStrings(all); !slices.Equal(got, want) {
		t.Errorf("rows in id order:\n%q\nwant\n%q", got, want)
	}
}

// Calls that queue behind a statement in flight are copied together once
// they add up to copyMinRows rows.
func TestEnqueueGroupCopied(t *testing.T) {
	f := newGroupFixture(t)
	f.logStatements()
	f.hold()
	var calls []groupCall
	var want []string
	for i := range copyMinRows {
		name := fmt.Sprintf("call-%03d", i)
		want = append(want, name)
		calls = append(calls, groupCall{name, func(ctx context.Context) error { return f.tp.Enqueue(ctx, []byte(name)) }})
	}
	wait := f.start(0, calls)
	f.release()
	for name, err := range wait() {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := f.statements(); !slices.Equal(got, []string{"COPY"}) {
		t.Errorf("%d queued calls ran %q, want one COPY", len(calls), got)
	}
	if got := f.rows(); !slices.Equal(got, want) {
		t.Errorf("rows in id order:\n%q\nwant\n%q", got, want)
	}
}

// A copied batch is all or none: a row the database rejects fails the
// call with the database's error and adds none of its rows.
func TestEnqueueBatchCopyRejected(t *testing.T) {
	f := newGroupFixture(t)
	f.exec(`CREATE FUNCTION reject_bad() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.data = 'bad' THEN RAISE EXCEPTION 'bad payload'; END IF; RETURN NEW; END $$`)
	f.exec(`CREATE TRIGGER reject_bad BEFORE INSERT ON ` + f.readyTable() + ` FOR EACH ROW EXECUTE FUNCTION reject_bad()`)
	batch := numbered("x", copyMinRows+5)
	batch[copyMinRows] = []byte("bad")
	err := f.tp.EnqueueBatch(f.ctx, batch)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Message != "bad payload" {
		t.Fatalf("EnqueueBatch with a rejected row: %v, want the trigger's error", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("batch enqueue of %d on topic %q", len(batch), "group")) {
		t.Errorf("error %q does not name the batch and the topic", err)
	}
	if got := f.rows(); len(got) != 0 {
		t.Errorf("%d rows of the rejected batch stored, want none", len(got))
	}
	// The connection is fine afterwards.
	if err := f.tp.EnqueueBatch(f.ctx, numbered("y", copyMinRows)); err != nil {
		t.Fatalf("EnqueueBatch after a rejected one: %v", err)
	}
}

// A COPY that the server does not finish within StatementTimeout is
// canceled: the call fails with the deadline and adds nothing, and the
// topic goes on working.
func TestEnqueueBatchCopyTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, db := pgtest.NewSchema(t)
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := New(db, Options{StatementTimeout: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	f := &groupFixture{t: t, ctx: ctx, db: db, tp: ps.topic("group")}
	f.exec(`CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$`)
	f.exec(`CREATE TRIGGER slow BEFORE INSERT ON ` + f.readyTable() + ` FOR EACH STATEMENT EXECUTE FUNCTION slow()`)

	start := time.Now()
	err = f.tp.EnqueueBatch(ctx, numbered("slow", copyMinRows))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("EnqueueBatch past StatementTimeout: %v, want context.DeadlineExceeded", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Errorf("EnqueueBatch past StatementTimeout: %v, want the server's query_canceled (the statement canceled)", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("EnqueueBatch past StatementTimeout returned after %v: the statement ran on", el)
	}
	if got := f.rows(); len(got) != 0 {
		t.Errorf("%d rows of the canceled batch stored, want none", len(got))
	}
	f.exec(`DROP TRIGGER slow ON ` + f.readyTable())
	for i := range 10 { // every connection of the pool is usable
		if err := f.tp.EnqueueBatch(ctx, numbered(fmt.Sprint("after-", i), copyMinRows)); err != nil {
			t.Fatalf("EnqueueBatch %d after a canceled one: %v", i, err)
		}
	}
	if got := f.rows(); len(got) != 10*copyMinRows {
		t.Errorf("%d rows after the canceled batch, want %d", len(got), 10*copyMinRows)
	}
}

// otherDriver is pgx's database/sql driver behind a connection type of
// its own, as another driver would be: what dbpubsub cannot COPY on.
type otherDriver struct{}

type otherConn struct{ *stdlib.Conn }

func (otherDriver) Open(dsn string) (driver.Conn, error) {
	c, err := stdlib.GetDefaultDriver().Open(dsn)
	if err != nil {
		return nil, err
	}
	return otherConn{c.(*stdlib.Conn)}, nil
}

// A DB on a driver other than pgx's adds large batches with INSERT.
func TestEnqueueBatchOtherDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, _ := pgtest.NewSchema(t)
	connector, err := otherDriverConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sql.OpenDB(connector), pgdialect.New())
	t.Cleanup(func() { _ = db.Close() })
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := New(db, Options{ListenDSN: dsn, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	tp := ps.topic("group")
	batch := numbered("other", copyMinRows+1)
	if err := tp.EnqueueBatch(ctx, batch); err != nil {
		t.Fatalf("EnqueueBatch of %d on another driver: %v", len(batch), err)
	}
	f := &groupFixture{t: t, ctx: ctx, db: db, tp: tp}
	if got, want := f.rows(), asStrings(batch); !slices.Equal(got, want) {
		t.Errorf("rows in id order:\n%q\nwant\n%q", got, want)
	}
}

type connector struct {
	dsn string
	d   driver.Driver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

func otherDriverConnector(dsn string) (driver.Connector, error) {
	return connector{dsn: dsn, d: otherDriver{}}, nil
}
