package template_test

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// checkMetrics checks what GET /metrics shows once the orders are
// handled: the orders sent on the topic, and on each subscription the
// orders acked and timed and the depth of its queue, none dead. The last
// acks may follow the stats by a moment: it retries for a few seconds.
func (p *process) checkMetrics(t *testing.T) {
	t.Helper()
	p.checkMetricsOf(t, true)
}

// checkMetricsOf is checkMetrics, without the depth of the queues unless
// queue (a backend without stats has none).
func (p *process) checkMetricsOf(t *testing.T, queue bool) {
	t.Helper()
	var problems []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		problems = metricProblems(p.metrics(t), queue)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, msg := range problems {
		t.Error(msg)
	}
}

// metrics reads GET /metrics, in the Prometheus text format.
func (p *process) metrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %s %q, want 200 and the Prometheus text format", resp.Status, ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return families
}

// metricProblems says what the metrics lack after the orders were handled
// (the queue gauges only if queue).
func metricProblems(families map[string]*dto.MetricFamily, queue bool) []string {
	var problems []string
	// find returns the sample of the family name, of type typ, with the
	// labels of the topic orders (on subscription sub unless it is "")
	// and extra, or nil after noting what is missing.
	find := func(name string, typ dto.MetricType, sub string, extra ...string) *dto.Metric {
		want := map[string]string{"messaging_system": "conveyor", "messaging_destination_name": "orders"}
		if sub != "" {
			want["messaging_consumer_group_name"] = sub
		}
		for i := 0; i+1 < len(extra); i += 2 {
			want[extra[i]] = extra[i+1]
		}
		f := families[name]
		if f == nil || f.GetType() != typ {
			problems = append(problems, fmt.Sprintf("no %s %s in GET /metrics", typ, name))
			return nil
		}
		for _, m := range f.GetMetric() {
			n := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					n++
				}
			}
			if n == len(want) {
				return m
			}
		}
		problems = append(problems, fmt.Sprintf("%s has no sample labelled %v: %v", name, want, f.GetMetric()))
		return nil
	}
	atLeast := func(what string, got float64, min int) {
		if got < float64(min) {
			problems = append(problems, fmt.Sprintf("%s = %v, want at least %d", what, got, min))
		}
	}

	if m := find("messaging_client_sent_messages_total", dto.MetricType_COUNTER, ""); m != nil {
		atLeast(`messaging_client_sent_messages_total{messaging_destination_name="orders"}`, m.GetCounter().GetValue(), orders)
	}
	for _, sub := range subscriptions {
		if m := find("conveyor_messages_acked_total", dto.MetricType_COUNTER, sub); m != nil {
			atLeast(fmt.Sprintf(`conveyor_messages_acked_total{messaging_consumer_group_name=%q}`, sub), m.GetCounter().GetValue(), orders)
		}
		if m := find("messaging_process_duration_seconds", dto.MetricType_HISTOGRAM, sub); m != nil {
			atLeast(fmt.Sprintf(`messaging_process_duration_seconds_count{messaging_consumer_group_name=%q}`, sub),
				float64(m.GetHistogram().GetSampleCount()), orders)
		}
		if !queue {
			continue
		}
		find("conveyor_queue_messages", dto.MetricType_GAUGE, sub, "conveyor_state", "ready")
		if m := find("conveyor_queue_messages", dto.MetricType_GAUGE, sub, "conveyor_state", "dead"); m != nil && m.GetGauge().GetValue() != 0 {
			problems = append(problems, fmt.Sprintf(`conveyor_queue_messages{conveyor_state="dead",messaging_consumer_group_name=%q} = %v, want 0`,
				sub, m.GetGauge().GetValue()))
		}
	}
	return problems
}

// TestTraces runs the app with its traces sent over OTLP/HTTP to a
// receiver of the test's, posts an order as a traced caller would (with a
// traceparent header), and checks that the order's spans arrive in the
// caller's trace: the HTTP server span, the "send orders" span of its
// Dispatch, and a "process orders" span on each subscription.
func TestTraces(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	p := startApp(t, "CONVEYOR_BACKEND=mem", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url,
		"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=shop-e2e")

	traceID, callerSpan := randomHex(t, 16), randomHex(t, 8)
	req, err := http.NewRequest("POST", p.url+"/orders", strings.NewReader(`{"item":"book","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var placed struct {
		OrderID string `json:"order_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&placed)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || err != nil {
		t.Fatalf("POST /orders: %s, %v", resp.Status, err)
	}

	// The order's spans: the server's and the send in the caller's trace;
	// the process spans are found by the event's subject, the order's id,
	// wherever they are.
	var server, send *span
	process := map[string]*span{} // by subscription
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, s := range rcv.spans() {
			switch {
			case s.traceID == traceID && s.kind == tracepb.Span_SPAN_KIND_SERVER:
				server = s
			case s.traceID == traceID && s.name == "send orders":
				send = s
			case s.name == "process orders" && s.attrs["cloudevents.event_subject"] == placed.OrderID:
				process[s.attrs["messaging.consumer.group.name"]] = s
			}
		}
		if server != nil && send != nil && len(process) == len(subscriptions) {
			break
		}
	}
	if server == nil || send == nil || len(process) != len(subscriptions) {
		t.Fatalf("after 30s the receiver has, of the order's spans: server %v, send %v, process %v; all the spans: %v",
			server, send, process, rcv.spans())
	}

	if server.name != "POST /orders" || server.parent != callerSpan || server.service != "shop-e2e" {
		t.Errorf("the server span %v: want POST /orders, a child of the caller's span %s, of the service OTEL_SERVICE_NAME names", server, callerSpan)
	}
	if send.kind != tracepb.Span_SPAN_KIND_PRODUCER || send.parent != server.id || send.attrs["messaging.destination.name"] != "orders" {
		t.Errorf("the send span %v: want a producer span on orders, a child of the server span %s", send, server.id)
	}
	for sub, s := range process {
		if s.kind != tracepb.Span_SPAN_KIND_CONSUMER || s.attrs["cloudevents.event_type"] != placedType {
			t.Errorf("the process span on %s %v: want a consumer span of the order's event", sub, s)
		}
	}
	for sub, s := range process {
		if s.traceID != traceID || s.parent != send.id {
			t.Errorf("the process span on %s %v: want it in the request's trace %s, a child of the send span %s", sub, s, traceID, send.id)
		}
	}
}

// span is what TestTraces looks at of a span the receiver got.
type span struct {
	traceID, id, parent string // hex
	name                string
	kind                tracepb.Span_SpanKind
	attrs               map[string]string // the string attributes
	service             string            // the resource's service.name
}

func (s *span) String() string {
	return fmt.Sprintf("{%q %s trace %s id %s parent %s service %s %v}", s.name, s.kind, s.traceID, s.id, s.parent, s.service, s.attrs)
}

// otlpReceiver is an OTLP/HTTP trace receiver: it accepts POST /v1/traces
// with a protobuf ExportTraceServiceRequest, as otlptracehttp sends it.
type otlpReceiver struct {
	url string
	mu  sync.Mutex
	got []*span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != "POST" || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces of application/x-protobuf", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var export coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &export)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var spans []*span
	for _, rs := range export.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := &span{traceID: hex.EncodeToString(s.GetTraceId()), id: hex.EncodeToString(s.GetSpanId()),
					parent: hex.EncodeToString(s.GetParentSpanId()), name: s.GetName(), kind: s.GetKind(),
					attrs: map[string]string{}, service: service}
				for _, kv := range s.GetAttributes() {
					if v := kv.GetValue().GetStringValue(); v != "" {
						sp.attrs[kv.GetKey()] = v
					}
				}
				spans = append(spans, sp)
			}
		}
	}
	r.mu.Lock()
	r.got = append(r.got, spans...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// spans returns the spans received so far.
func (r *otlpReceiver) spans() []*span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
