module github.com/conveyorgo/conveyor/sqlitepubsub

go 1.26.0

// The conveyor modules this one needs are replaced by the directories of
// this checkout, so that it builds and tests with GOWORK=off against the
// checkout (docs/modules.md); the go.work at the root does the same.
replace github.com/conveyorgo/conveyor => ..

require (
	github.com/conveyorgo/conveyor v0.0.0-00010101000000-000000000000
	github.com/uptrace/bun v1.3.0
	github.com/uptrace/bun/dialect/sqlitedialect v1.3.0
	go.uber.org/goleak v1.3.0
	modernc.org/sqlite v1.62.0
)

require (
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/samber/do/v2 v2.0.0 // indirect
	github.com/samber/go-type-to-string v1.8.0 // indirect
	github.com/tmthrgd/go-hex v0.0.0-20190904060850-447a3041c3bc // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.49.0 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
