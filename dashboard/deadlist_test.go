package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/channelpubsub"
	"github.com/conveyorgo/conveyor/dashboard"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// deadOnly is a PubSub whose topics can neither peek nor count, but list,
// re-queue and delete their dead messages, as kafkapubsub's: what it wraps
// is hidden (no Unwrap), but for the dead letters.
type deadOnly struct{ ps pubsub.PubSub }

func (d deadOnly) Topic(name string) pubsub.Topic { return deadOnlyTopic{d.ps.Topic(name)} }

type deadOnlyTopic struct{ t pubsub.Topic }

func (t deadOnlyTopic) Enqueue(ctx context.Context, data []byte) error { return t.t.Enqueue(ctx, data) }
func (t deadOnlyTopic) Dequeue(ctx context.Context) (pubsub.Message, error) {
	return t.t.Dequeue(ctx)
}
func (t deadOnlyTopic) Close() error { return t.t.Close() }
func (t deadOnlyTopic) ListDead(ctx context.Context, limit int) ([]admin.DeadMessage, error) {
	return admin.ListDead(ctx, t.t, limit)
}
func (t deadOnlyTopic) RequeueDead(ctx context.Context, id string) error {
	return admin.RequeueDead(ctx, t.t, id)
}
func (t deadOnlyTopic) RequeueAllDead(ctx context.Context) (int, error) {
	return admin.RequeueAllDead(ctx, t.t)
}
func (t deadOnlyTopic) PurgeDead(ctx context.Context) (int, error) { return admin.PurgeDead(ctx, t.t) }
func (t deadOnlyTopic) DeleteDead(ctx context.Context, id string) error {
	return admin.DeleteDead(ctx, t.t, id)
}

// On a backend that cannot peek or count but lists its dead messages
// (Kafka, NATS without counts), the topics page says the counts are
// missing and links to the dead list; the dead list, a dead message's
// page and its requeue work; another message's page, and a later page of
// the list, say why not.
func TestDeadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inner := channelpubsub.New()
	t.Cleanup(func() { _ = inner.Close() })
	orders := inner.Topic("orders")
	for _, data := range []string{`{"order":1}`, `{"order":2}`} {
		if err := orders.Enqueue(ctx, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	m := dequeue(t, orders)
	if err := pubsub.Reject(ctx, m, errors.New("warehouse offline")); err != nil {
		t.Fatal(err)
	}
	ready := dequeue(t, orders)
	if err := ready.Nack(ctx); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, deadOnly{inner}, dashboard.Options{Topics: []string{"orders"}, SampleInterval: time.Hour})

	_, body := s.get(t, "/conveyor/")
	mustContain(t, "the topics page", body,
		`not counted by this backend · <a href="/conveyor/topics/orders/default/?state=dead">dead messages</a>`)
	mustNotContain(t, "the topics page", body, `class="error"`, "collecting") // no chart: nothing to sample

	_, body = s.get(t, "/conveyor/topics/orders/default/?state=dead")
	mustContain(t, "the dead list", body, m.ID(), "warehouse offline", `{&#34;order&#34;:1}`,
		"confirm/requeue?id="+m.ID(), "confirm/requeue-all")
	if code, body := s.get(t, "/conveyor/topics/orders/default/?state=dead&after=x"); code != http.StatusBadRequest ||
		!strings.Contains(body, "one page") {
		t.Errorf("a later page of the dead list: %d\n%s", code, body)
	}
	if code, body := s.get(t, "/conveyor/topics/orders/default/?state=ready"); code != http.StatusOK ||
		!strings.Contains(body, "This backend cannot list its messages.") {
		t.Errorf("the ready list: %d\n%s", code, body)
	}

	code, body := s.get(t, "/conveyor/topics/orders/default/messages/"+m.ID())
	if code != http.StatusOK {
		t.Fatalf("the dead message's page: %d\n%s", code, body)
	}
	mustContain(t, "the dead message's page", body, "warehouse offline", `&#34;order&#34;: 1`)
	if code, body := s.get(t, "/conveyor/topics/orders/default/messages/"+ready.ID()); code != http.StatusNotFound ||
		!strings.Contains(body, "this backend shows dead messages only") {
		t.Errorf("a ready message's page: %d, want 404 saying only dead ones are shown\n%s", code, body)
	}

	if resp := s.confirm(t, "/conveyor/topics/orders/default/confirm/requeue?id="+m.ID()); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("requeue: %s", resp.Status)
	}
	_, body = s.get(t, "/conveyor/topics/orders/default/?state=dead")
	mustContain(t, "the dead list after the requeue", body, "No dead messages.")
	mustNotContain(t, "the dead list after the requeue", body, "confirm/requeue-all")
}
