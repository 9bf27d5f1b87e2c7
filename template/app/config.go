package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/conveyorgo/conveyor/kafkapubsub"
)

// Backend says where messages live.
type Backend string

const (
	// BackendMem keeps messages in this process's memory (channelpubsub):
	// nothing to set up; queued messages are lost if the process dies.
	BackendMem Backend = "mem"
	// BackendDB keeps messages in PostgreSQL (dbpubsub): durable, and
	// shared by every process on the database.
	BackendDB Backend = "db"
	// BackendNATS keeps messages in NATS JetStream (natspubsub): durable,
	// and shared by every process on the server or cluster.
	BackendNATS Backend = "nats"
	// BackendSQLite keeps messages in a SQLite file (sqlitepubsub):
	// durable with no server, shared by every process on the file.
	BackendSQLite Backend = "sqlite"
	// BackendKafka keeps messages in Apache Kafka (kafkapubsub, on share
	// groups): durable, and shared by every process on the cluster.
	BackendKafka Backend = "kafka"
)

// Dashboard says whether the app serves the dashboard at /conveyor/, and
// whether it can change anything.
type Dashboard string

const (
	// DashboardOn serves it with its actions (requeue, delete, cancel,
	// pause): put it behind the app's own authentication in production.
	DashboardOn Dashboard = "on"
	// DashboardReadOnly serves it without actions.
	DashboardReadOnly Dashboard = "read-only"
	// DashboardOff does not serve it.
	DashboardOff Dashboard = "off"
)

// Config is the app's configuration, read from the environment by
// LoadConfig. It is registered in the injector: a field of type Config
// tagged `inject:""` gets it.
type Config struct {
	Addr         string        // CONVEYOR_ADDR, else ":$PORT", else 127.0.0.1:8080
	Backend      Backend       // CONVEYOR_BACKEND: mem (default), db, nats, sqlite or kafka
	DatabaseURL  string        // DATABASE_URL: the PostgreSQL DSN, needed by db
	Schema       string        // CONVEYOR_DB_SCHEMA: the schema of the app's tables, created if missing (default: the DSN's search_path)
	NATSURL      string        // NATS_URL: the NATS server(s), needed by nats, as in nats://127.0.0.1:4222
	NATSPrefix   string        // CONVEYOR_NATS_PREFIX: starts the names of the app's streams (default: natspubsub's, conveyor)
	SQLitePath   string        // CONVEYOR_SQLITE_PATH: the SQLite file, created if missing, needed by sqlite
	KafkaBrokers string        // KAFKA_BROKERS: the Kafka brokers, host:port, comma-separated, needed by kafka
	KafkaPrefix  string        // CONVEYOR_KAFKA_PREFIX: starts the names of the app's Kafka topics and groups (default: kafkapubsub's, conveyor)
	Workers      int           // CONVEYOR_WORKERS: events handled at once (default 10)
	ReportEvery  time.Duration // CONVEYOR_REPORT_EVERY: period of the sales report (default 1m)
	DrainTimeout time.Duration // CONVEYOR_DRAIN_TIMEOUT: how long a stop waits for work in flight (default 30s)
	ReadTimeout  time.Duration // CONVEYOR_READ_TIMEOUT: longest time to read a request, body included (default 10s)
	WriteTimeout time.Duration // CONVEYOR_WRITE_TIMEOUT: longest time to answer a request once read (default 30s)
	IdleTimeout  time.Duration // CONVEYOR_IDLE_TIMEOUT: how long an idle keep-alive connection stays open (default 1m)
	LogLevel     slog.Level    // CONVEYOR_LOG_LEVEL: debug, info (default), warn or error
	Dashboard    Dashboard     // CONVEYOR_DASHBOARD: on (default), read-only or off: the dashboard at /conveyor/
	OTLPEndpoint string        // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT: where traces go over OTLP/HTTP (default: no tracing)
}

// Defaults of Config.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultWorkers      = 10
	DefaultReportEvery  = time.Minute
	DefaultDrainTimeout = 30 * time.Second
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultIdleTimeout  = time.Minute
)

// schemaName is what CONVEYOR_DB_SCHEMA accepts: a lower-case SQL
// identifier that needs no quoting.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// natsPrefix is what CONVEYOR_NATS_PREFIX accepts (natspubsub.Options.Prefix),
// and CONVEYOR_KAFKA_PREFIX (kafkapubsub.Options.Prefix).
var natsPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// LoadConfig reads the configuration from getenv (os.Getenv in main). An
// error names every variable that is wrong and what it should be.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:         DefaultAddr,
		Backend:      BackendMem,
		DatabaseURL:  getenv("DATABASE_URL"),
		NATSURL:      getenv("NATS_URL"),
		SQLitePath:   getenv("CONVEYOR_SQLITE_PATH"),
		OTLPEndpoint: cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")),
		Workers:      DefaultWorkers,
		ReportEvery:  DefaultReportEvery,
		DrainTimeout: DefaultDrainTimeout,
		ReadTimeout:  DefaultReadTimeout,
		WriteTimeout: DefaultWriteTimeout,
		IdleTimeout:  DefaultIdleTimeout,
		LogLevel:     slog.LevelInfo,
		Dashboard:    DashboardOn,
	}
	var errs []error
	bad := func(name, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: want %s", name, value, want))
	}

	if v := getenv("CONVEYOR_ADDR"); v != "" {
		c.Addr = v
	} else if v := getenv("PORT"); v != "" {
		c.Addr = ":" + v // platforms that set PORT expect every interface
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		bad("CONVEYOR_ADDR (or PORT)", c.Addr, "host:port, as in 127.0.0.1:8080 (port 0 picks a free one)")
	}

	switch v := strings.ToLower(getenv("CONVEYOR_BACKEND")); v {
	case "", "mem", "memory":
	case "db", "postgres", "postgresql":
		c.Backend = BackendDB
		if c.DatabaseURL == "" {
			errs = append(errs, errors.New("CONVEYOR_BACKEND=db needs DATABASE_URL, as in postgres://user:password@localhost:5432/shop"))
		}
	case "nats":
		c.Backend = BackendNATS
		if c.NATSURL == "" {
			errs = append(errs, errors.New("CONVEYOR_BACKEND=nats needs NATS_URL, as in nats://127.0.0.1:4222"))
		}
	case "sqlite":
		c.Backend = BackendSQLite
		if c.SQLitePath == "" {
			errs = append(errs, errors.New("CONVEYOR_BACKEND=sqlite needs CONVEYOR_SQLITE_PATH, as in ./shop.db"))
		}
	case "kafka":
		c.Backend = BackendKafka
		if strings.TrimSpace(getenv("KAFKA_BROKERS")) == "" {
			errs = append(errs, errors.New("CONVEYOR_BACKEND=kafka needs KAFKA_BROKERS, as in 127.0.0.1:9092,127.0.0.1:9093"))
		}
	default:
		bad("CONVEYOR_BACKEND", v, "mem (in-process, the default), db (PostgreSQL, with DATABASE_URL), nats (NATS JetStream, with NATS_URL), sqlite (a SQLite file, with CONVEYOR_SQLITE_PATH) or kafka (Apache Kafka, with KAFKA_BROKERS)")
	}

	if v := getenv("KAFKA_BROKERS"); v != "" {
		c.KafkaBrokers = v
		if _, err := kafkapubsub.ParseBrokers(v); err != nil {
			bad("KAFKA_BROKERS", v, "host:port of each broker, comma-separated, as in 127.0.0.1:9092,127.0.0.1:9093")
		}
	}

	if v := getenv("CONVEYOR_DB_SCHEMA"); v != "" {
		if !schemaName.MatchString(v) {
			bad("CONVEYOR_DB_SCHEMA", v, "a schema name of lower-case letters, digits and _, as in shop")
		}
		c.Schema = v
	}

	if v := getenv("CONVEYOR_NATS_PREFIX"); v != "" {
		if !natsPrefix.MatchString(v) {
			bad("CONVEYOR_NATS_PREFIX", v, "1 to 32 ASCII letters, digits, - and _, as in shop")
		}
		c.NATSPrefix = v
	}

	if v := getenv("CONVEYOR_KAFKA_PREFIX"); v != "" {
		if !natsPrefix.MatchString(v) {
			bad("CONVEYOR_KAFKA_PREFIX", v, "1 to 32 ASCII letters, digits, - and _, as in shop")
		}
		c.KafkaPrefix = v
	}

	if v := getenv("CONVEYOR_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			bad("CONVEYOR_WORKERS", v, "a number from 1 to 1000")
		}
		c.Workers = n
	}
	duration := func(name string, d *time.Duration) {
		if v := getenv(name); v != "" {
			p, err := time.ParseDuration(v)
			if err != nil || p <= 0 {
				bad(name, v, "a positive duration, as in 30s or 5m")
			}
			*d = p
		}
	}
	duration("CONVEYOR_REPORT_EVERY", &c.ReportEvery)
	duration("CONVEYOR_DRAIN_TIMEOUT", &c.DrainTimeout)
	duration("CONVEYOR_READ_TIMEOUT", &c.ReadTimeout)
	duration("CONVEYOR_WRITE_TIMEOUT", &c.WriteTimeout)
	duration("CONVEYOR_IDLE_TIMEOUT", &c.IdleTimeout)

	if v := getenv("CONVEYOR_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("CONVEYOR_LOG_LEVEL", v, "debug, info, warn or error")
		}
	}
	switch v := Dashboard(getenv("CONVEYOR_DASHBOARD")); v {
	case "":
	case DashboardOn, DashboardReadOnly, DashboardOff:
		c.Dashboard = v
	default:
		bad("CONVEYOR_DASHBOARD", string(v), "on, read-only or off")
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("configuration: %w", errors.Join(errs...))
	}
	return c, nil
}
