package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr []string // fragments of the error; none means no error
	}{
		{"Defaults", nil, func(t *testing.T, c Config) {
			want := Config{Addr: DefaultAddr, Backend: BackendMem, Workers: DefaultWorkers,
				ReportEvery: DefaultReportEvery, DrainTimeout: DefaultDrainTimeout, ReadTimeout: DefaultReadTimeout,
				WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout, LogLevel: slog.LevelInfo, Dashboard: DashboardOn}
			if c != want {
				t.Errorf("got %+v, want %+v", c, want)
			}
		}, nil},
		{"OTLP", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, func(t *testing.T, c Config) {
			if c.OTLPEndpoint != "http://collector:4318" {
				t.Errorf("OTLPEndpoint = %q", c.OTLPEndpoint)
			}
		}, nil},
		{"OTLPTracesWins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/v1/traces"}, func(t *testing.T, c Config) {
			if c.OTLPEndpoint != "http://traces:4318/v1/traces" {
				t.Errorf("OTLPEndpoint = %q", c.OTLPEndpoint)
			}
		}, nil},
		{"AddrWinsOverPort", map[string]string{"CONVEYOR_ADDR": "127.0.0.1:0", "PORT": "9000"}, func(t *testing.T, c Config) {
			if c.Addr != "127.0.0.1:0" {
				t.Errorf("Addr = %q", c.Addr)
			}
		}, nil},
		{"Port", map[string]string{"PORT": "9000"}, func(t *testing.T, c Config) {
			if c.Addr != ":9000" {
				t.Errorf("Addr = %q, want :9000", c.Addr)
			}
		}, nil},
		{"DB", map[string]string{"CONVEYOR_BACKEND": "db", "DATABASE_URL": "postgres://localhost/shop"}, func(t *testing.T, c Config) {
			if c.Backend != BackendDB || c.DatabaseURL != "postgres://localhost/shop" {
				t.Errorf("got %+v", c)
			}
		}, nil},
		{"Tuning", map[string]string{"CONVEYOR_WORKERS": "3", "CONVEYOR_REPORT_EVERY": "5s",
			"CONVEYOR_DRAIN_TIMEOUT": "2s", "CONVEYOR_LOG_LEVEL": "debug", "CONVEYOR_READ_TIMEOUT": "3s",
			"CONVEYOR_WRITE_TIMEOUT": "4s", "CONVEYOR_IDLE_TIMEOUT": "6s"}, func(t *testing.T, c Config) {
			if c.Workers != 3 || c.ReportEvery != 5*time.Second || c.DrainTimeout != 2*time.Second || c.LogLevel != slog.LevelDebug ||
				c.ReadTimeout != 3*time.Second || c.WriteTimeout != 4*time.Second || c.IdleTimeout != 6*time.Second {
				t.Errorf("got %+v", c)
			}
		}, nil},
		{"Schema", map[string]string{"CONVEYOR_BACKEND": "db", "DATABASE_URL": "postgres://localhost/shop", "CONVEYOR_DB_SCHEMA": "shop_1"},
			func(t *testing.T, c Config) {
				if c.Schema != "shop_1" {
					t.Errorf("Schema = %q, want shop_1", c.Schema)
				}
			}, nil},
		{"BadSchema", map[string]string{"CONVEYOR_DB_SCHEMA": `Shop"; DROP`}, nil, []string{"CONVEYOR_DB_SCHEMA", "lower-case"}},
		{"DBWithoutURL", map[string]string{"CONVEYOR_BACKEND": "db"}, nil, []string{"DATABASE_URL"}},
		{"NATS", map[string]string{"CONVEYOR_BACKEND": "nats", "NATS_URL": "nats://127.0.0.1:4222", "CONVEYOR_NATS_PREFIX": "shop-1"},
			func(t *testing.T, c Config) {
				if c.Backend != BackendNATS || c.NATSURL != "nats://127.0.0.1:4222" || c.NATSPrefix != "shop-1" {
					t.Errorf("got %+v", c)
				}
			}, nil},
		{"NATSWithoutURL", map[string]string{"CONVEYOR_BACKEND": "nats"}, nil, []string{"NATS_URL"}},
		{"SQLite", map[string]string{"CONVEYOR_BACKEND": "sqlite", "CONVEYOR_SQLITE_PATH": "shop.db"}, func(t *testing.T, c Config) {
			if c.Backend != BackendSQLite || c.SQLitePath != "shop.db" {
				t.Errorf("backend %q, path %q, want sqlite on shop.db", c.Backend, c.SQLitePath)
			}
		}, nil},
		{"SQLiteWithoutPath", map[string]string{"CONVEYOR_BACKEND": "sqlite"}, nil, []string{"CONVEYOR_SQLITE_PATH"}},
		{"Kafka", map[string]string{"CONVEYOR_BACKEND": "kafka", "KAFKA_BROKERS": "127.0.0.1:9092, 127.0.0.1:9093",
			"CONVEYOR_KAFKA_PREFIX": "shop-1"}, func(t *testing.T, c Config) {
			if c.Backend != BackendKafka || c.KafkaPrefix != "shop-1" ||
				c.KafkaBrokers != "127.0.0.1:9092, 127.0.0.1:9093" {
				t.Errorf("got %+v", c)
			}
		}, nil},
		{"KafkaWithoutBrokers", map[string]string{"CONVEYOR_BACKEND": "kafka"}, nil, []string{"KAFKA_BROKERS"}},
		{"BadKafkaBrokers", map[string]string{"CONVEYOR_BACKEND": "kafka", "KAFKA_BROKERS": "127.0.0.1:9092,,kafka"}, nil,
			[]string{"KAFKA_BROKERS", "host:port of each broker"}},
		{"BadKafkaPrefix", map[string]string{"CONVEYOR_KAFKA_PREFIX": "shop.1"}, nil, []string{"CONVEYOR_KAFKA_PREFIX", "1 to 32"}},
		{"BadNATSPrefix", map[string]string{"CONVEYOR_NATS_PREFIX": "shop.orders"}, nil, []string{"CONVEYOR_NATS_PREFIX", "letters"}},
		{"UnknownBackend", map[string]string{"CONVEYOR_BACKEND": "redis"}, nil, []string{`CONVEYOR_BACKEND="redis"`, "mem", "db", "nats", "sqlite"}},
		{"BadAddr", map[string]string{"CONVEYOR_ADDR": "8080"}, nil, []string{"CONVEYOR_ADDR", "host:port"}},
		{"DashboardReadOnly", map[string]string{"CONVEYOR_DASHBOARD": "read-only"}, func(t *testing.T, c Config) {
			if c.Dashboard != DashboardReadOnly {
				t.Errorf("Dashboard = %q, want read-only", c.Dashboard)
			}
		}, nil},
		{"BadDashboard", map[string]string{"CONVEYOR_DASHBOARD": "yes"}, nil, []string{`CONVEYOR_DASHBOARD="yes"`, "on, read-only or off"}},
		{"EveryMistake", map[string]string{"CONVEYOR_WORKERS": "0", "CONVEYOR_REPORT_EVERY": "often",
			"CONVEYOR_DRAIN_TIMEOUT": "-1s", "CONVEYOR_LOG_LEVEL": "loud", "CONVEYOR_READ_TIMEOUT": "0s",
			"CONVEYOR_WRITE_TIMEOUT": "x", "CONVEYOR_IDLE_TIMEOUT": "-5s"},
			nil, []string{"CONVEYOR_WORKERS", "CONVEYOR_REPORT_EVERY", "CONVEYOR_DRAIN_TIMEOUT", "CONVEYOR_LOG_LEVEL",
				"CONVEYOR_READ_TIMEOUT", "CONVEYOR_WRITE_TIMEOUT", "CONVEYOR_IDLE_TIMEOUT"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadConfig(func(k string) string { return c.env[k] })
			if len(c.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.check(t, cfg)
				return
			}
			if err == nil {
				t.Fatalf("no error for %v", c.env)
			}
			for _, s := range c.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}
