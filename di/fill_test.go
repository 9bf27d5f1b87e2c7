package di

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type ordersHandler struct {
	Queue testTopic `inject:"orders"`
	DB    *testDB   `inject:""`
	Calls int       // no tag: left alone
}

type auditDeps struct {
	Log testTopic `inject:"audit,optional"`
}

type fillHandlers struct {
	Orders    ordersHandler  // nested, filled recursively
	Started   time.Time      // struct without tags: left alone
	Ptr       *ordersHandler // pointer without tag: left alone
	auditDeps                // embedded unexported type: its exported fields are filled
	Cache     *testCache     `inject:",optional"`
	Replica   *testDB        `inject:"replica"`
}

func TestFill(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	db := &testDB{dsn: "main"}
	replica := &testDB{dsn: "replica"}
	must(t, RegisterSingleton(ctx, db))
	must(t, RegisterNamedSingleton(ctx, "replica", replica))
	must(t, Register(ctx, func(_ context.Context, name string) (testTopic, error) { return &topicImpl{name}, nil }))

	started := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	h := fillHandlers{Started: started, Orders: ordersHandler{Calls: 7}}
	must(t, Fill(ctx, &h))

	if h.Orders.Queue == nil || h.Orders.Queue.Name() != "orders" {
		t.Errorf("Orders.Queue = %v; want the factory's orders topic", h.Orders.Queue)
	}
	if h.Orders.DB != db || h.Replica != replica {
		t.Errorf("Orders.DB, Replica = %p, %p; want %p, %p", h.Orders.DB, h.Replica, db, replica)
	}
	if h.Orders.Calls != 7 || !h.Started.Equal(started) || h.Ptr != nil {
		t.Errorf("untagged fields changed: Calls=%d Started=%v Ptr=%v", h.Orders.Calls, h.Started, h.Ptr)
	}
	if h.Log == nil || h.Log.Name() != "audit" {
		t.Errorf("embedded Log = %v; want the factory's audit topic (optional but provided)", h.Log)
	}
	if h.Cache != nil {
		t.Errorf("optional Cache = %v; want nil: nothing provides it", h.Cache)
	}
	if again := MustResolve[*testDB](ctx); again != h.Orders.DB {
		t.Error("Fill and Resolve disagree")
	}
}

func TestFillOptional(t *testing.T) {
	t.Parallel()
	errDown := errors.New("down")
	type target struct {
		DB    *testDB   `inject:",optional"`
		Topic testTopic `inject:"audit,optional"`
	}
	def := &testDB{dsn: "default"}
	tests := []struct {
		name     string
		register func(ctx context.Context) error
		wantDB   *testDB
		wantErr  error
	}{
		{
			name:     "nothing registered keeps the field",
			register: func(context.Context) error { return nil },
			wantDB:   def,
		},
		{
			name:     "registered is filled",
			register: func(ctx context.Context) error { return RegisterSingleton(ctx, &testDB{dsn: "db"}) },
			wantDB:   &testDB{dsn: "db"},
		},
		{
			name: "provider failure is returned",
			register: func(ctx context.Context) error {
				return RegisterLazySingleton(ctx, func(context.Context) (*testDB, error) { return nil, errDown })
			},
			wantErr: errDown,
		},
		{
			name: "missing dependency of a registered service is returned",
			register: func(ctx context.Context) error {
				return RegisterLazySingleton(ctx, func(ctx context.Context) (*testDB, error) {
					_, err := Resolve[*testCache](ctx)
					return nil, err
				})
			},
			wantErr: ErrNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := newCtx(t)
			must(t, tt.register(ctx))
			v := target{DB: def}
			err := Fill(ctx, &v)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v; want %v", err, tt.wantErr)
				}
				return
			}
			must(t, err)
			if v.DB.dsn != tt.wantDB.dsn || v.Topic != nil {
				t.Errorf("got DB %+v, Topic %v; want DB %+v, Topic nil", v.DB, v.Topic, tt.wantDB)
			}
		})
	}
}

func TestFillErrorNamesField(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	must(t, RegisterSingleton(ctx, &testDB{}))
	errDown := errors.New("down")
	must(t, RegisterLazySingleton(ctx, func(context.Context) (*testCache, error) { return nil, errDown }))

	type withCache struct {
		Orders ordersHandler
		Cache  *testCache `inject:""`
	}
	tests := []struct {
		name   string
		target any
		is     error
		want   string
	}{
		{
			name:   "missing named service in a nested struct",
			target: &fillHandlers{},
			is:     ErrNotFound,
			want:   `di: not found: di.testTopic "orders" (field di.fillHandlers.Orders.Queue)`,
		},
		{
			name:   "missing service through an embedded struct",
			target: &struct{ withCache }{},
			is:     ErrNotFound,
			want:   `di: not found: di.testTopic "orders" (field struct.withCache.Orders.Queue)`,
		},
		{
			name: "provider failure",
			target: &struct {
				Cache *testCache `inject:""`
			}{},
			is:   errDown,
			want: "di: provide *di.testCache (field struct.Cache): down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Fill(ctx, tt.target)
			if !errors.Is(err, tt.is) {
				t.Fatalf("error = %v; want %v", err, tt.is)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q; want %q", err, tt.want)
			}
		})
	}
}

func TestFillAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	must(t, RegisterSingleton(ctx, &testDB{}))
	var h ordersHandler // DB is provided, Queue ("orders") is not
	if err := Fill(ctx, &h); !errors.Is(err, ErrNotFound) {
		t.Fatalf("error = %v; want ErrNotFound", err)
	}
	if h.DB != nil {
		t.Error("a failed Fill set a field")
	}
}

func TestFillInvalidTarget(t *testing.T) {
	t.Parallel()
	type unexportedTagged struct {
		OK *testDB `inject:""`
		db *testDB `inject:""`
	}
	type badOption struct {
		Orders testTopic `inject:"orders,optinal"`
	}
	type badNested struct {
		Inner struct {
			Orders testTopic `inject:"orders,"`
		}
	}
	type hidden struct {
		orders ordersHandler // unexported, holds tagged fields
	}
	var nilPtr *ordersHandler
	n := 3
	tests := []struct {
		name   string
		target any
		want   string
	}{
		{"nil", nil, "got nil"},
		{"struct value", ordersHandler{}, "got di.ordersHandler"},
		{"nil pointer", nilPtr, "nil *di.ordersHandler"},
		{"pointer to non-struct", &n, "got *int"},
		{"pointer to pointer", &nilPtr, "got **di.ordersHandler"},
		{"unexported tagged field", &unexportedTagged{}, "field di.unexportedTagged.db: unexported"},
		{"unknown option", &badOption{}, `field di.badOption.Orders: inject tag "orders,optinal": unknown option "optinal"`},
		{"nested bad tag", &badNested{}, `field di.badNested.Inner.Orders: inject tag "orders,": empty option`},
		{"unexported nested struct", &hidden{}, "field di.hidden.orders: unexported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := newCtx(t)
			must(t, RegisterSingleton(ctx, &testDB{}))
			err := Fill(ctx, tt.target)
			if !errors.Is(err, ErrInvalidTarget) {
				t.Fatalf("error = %v; want ErrInvalidTarget", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if u, ok := tt.target.(*unexportedTagged); ok && u.OK != nil {
				t.Error("an invalid target was partly filled")
			}
		})
	}
}

func TestFillPlanCached(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[fillHandlers]()
	if planFor(typ) != planFor(typ) {
		t.Error("planFor built two plans for one type")
	}
	got := []string{}
	for _, f := range planFor(typ).fields {
		got = append(got, f.path)
	}
	want := []string{
		"di.fillHandlers.Orders.Queue", "di.fillHandlers.Orders.DB",
		"di.fillHandlers.auditDeps.Log", "di.fillHandlers.Cache", "di.fillHandlers.Replica",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan fields = %q; want %q", got, want)
	}
}

func TestParseTag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tag          string
		wantName     string
		wantOptional bool
		wantErr      string
	}{
		{tag: ""},
		{tag: "orders", wantName: "orders"},
		{tag: "orders,optional", wantName: "orders", wantOptional: true},
		{tag: ",optional", wantOptional: true},
		{tag: "pubsub.Topic#orders", wantName: "pubsub.Topic#orders"},
		{tag: "orders,", wantErr: "empty option"},
		{tag: ",", wantErr: "empty option"},
		{tag: "orders,optional,optional", wantErr: "given twice"},
		{tag: "orders,required", wantErr: `unknown option "required"`},
		{tag: "orders, optional", wantErr: `unknown option " optional"`},
		{tag: " orders", wantErr: "space"},
		{tag: "orders ", wantErr: "space"},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			t.Parallel()
			name, optional, err := ParseTag(tt.tag)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidTarget) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseTag(%q) error = %v; want ErrInvalidTarget mentioning %q", tt.tag, err, tt.wantErr)
				}
				return
			}
			if err != nil || name != tt.wantName || optional != tt.wantOptional {
				t.Fatalf("ParseTag(%q) = %q, %v, %v; want %q, %v, nil", tt.tag, name, optional, err, tt.wantName, tt.wantOptional)
			}
		})
	}
}

func FuzzParseTag(f *testing.F) {
	for _, seed := range []string{
		"", "orders", "orders,optional", ",optional", "orders,", ",", "a,optional,optional",
		"a,b", " a", "a ", "a,optional,", "ünïcode,optional", "a#b", "\x00,optional",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		name, optional, err := ParseTag(tag)
		if err != nil {
			if !errors.Is(err, ErrInvalidTarget) {
				t.Fatalf("ParseTag(%q) error %v does not wrap ErrInvalidTarget", tag, err)
			}
			if name != "" || optional {
				t.Fatalf("ParseTag(%q) failed but returned %q, %v", tag, name, optional)
			}
			return
		}
		if strings.Contains(name, ",") || strings.TrimSpace(name) != name {
			t.Fatalf("ParseTag(%q) name = %q", tag, name)
		}
		// The canonical spelling parses back to the same result.
		canon := name
		if optional {
			canon += ",optional"
		}
		n2, o2, err := ParseTag(canon)
		if err != nil || n2 != name || o2 != optional {
			t.Fatalf("ParseTag(%q) = %q, %v, %v; want %q, %v from %q", canon, n2, o2, err, name, optional, tag)
		}
	})
}

type benchA struct{}
type benchB struct{}
type benchC struct{}

type benchTarget struct {
	A     *benchA   `inject:""`
	B     *benchB   `inject:""`
	C     *benchC   `inject:""`
	Topic testTopic `inject:"orders"`
	Spare testTopic `inject:"spare,optional"`
}

// BenchmarkFill fills a 5-field struct (3 by type, 1 from a named factory, 1
// optional and missing) once the services are built. References measured in
// the same run: the same five resolutions by hand with Resolve, and Fill
// from inside a provider, where every field goes through do.
func BenchmarkFill(b *testing.B) {
	ctx := NewContext(context.Background())
	defer Shutdown(ctx)
	must(b, RegisterSingleton(ctx, &benchA{}))
	must(b, RegisterSingleton(ctx, &benchB{}))
	must(b, RegisterLazySingleton(ctx, func(context.Context) (*benchC, error) { return &benchC{}, nil }))
	must(b, Register(ctx, func(_ context.Context, name string) (testTopic, error) { return &topicImpl{name}, nil }))
	var warm benchTarget
	must(b, Fill(ctx, &warm))

	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/5, "ns/field")
	}
	b.Run("Fill", func(b *testing.B) {
		b.ReportAllocs()
		var t benchTarget
		for b.Loop() {
			t = benchTarget{}
			if err := Fill(ctx, &t); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("Resolve5", func(b *testing.B) {
		b.ReportAllocs()
		var t benchTarget
		for b.Loop() {
			var err [5]error
			t.A, err[0] = Resolve[*benchA](ctx)
			t.B, err[1] = Resolve[*benchB](ctx)
			t.C, err[2] = Resolve[*benchC](ctx)
			t.Topic, err[3] = ResolveNamed[testTopic](ctx, "orders")
			if _, err[4] = ResolveNamed[testTopic](ctx, "spare"); errors.Is(err[4], ErrNotFound) {
				err[4] = nil
			}
			if e := errors.Join(err[:]...); e != nil {
				b.Fatal(e)
			}
		}
		report(b)
	})
	b.Run("FillInProvider", func(b *testing.B) {
		b.ReportAllocs()
		st := ctx.Value(ctxKey{}).(*binding).st
		// A context as a provider sees it: resolutions go through do.
		pctx := st.withInjector(ctx, st.root.Scope("bench"))
		var t benchTarget
		for b.Loop() {
			t = benchTarget{}
			if err := Fill(pctx, &t); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}

func TestFillManyFields(t *testing.T) {
	t.Parallel()
	ctx := newCtx(t)
	for i, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		must(t, RegisterNamedSingleton(ctx, name, i))
	}
	var v struct {
		A int `inject:"a"`
		B int `inject:"b"`
		C int `inject:"c"`
		D int `inject:"d"`
		E int `inject:"e"`
		F int `inject:"f"`
		G int `inject:"g"`
		H int `inject:"h"`
		I int `inject:"i"`
		J int `inject:"j"`
	}
	must(t, Fill(ctx, &v))
	if v.A != 0 || v.E != 4 || v.J != 9 {
		t.Errorf("got %+v; want A..J = 0..9", v)
	}
}
