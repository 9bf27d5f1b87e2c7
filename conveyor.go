// Package conveyor is dependency-injected pub/sub for Go: typed events and
// work queues behind one small contract (package pubsub), on Go channels
// in-process (channelpubsub) or durably on PostgreSQL (dbpubsub), with
// topics injected into structs by tag (package di).
//
// This package holds only what the app generator needs to know about the
// module itself: its path and its go.mod and go.sum, so that a generated
// app requires the same dependencies, at the same versions, with a go.sum
// complete enough to build without the network. To start a new app:
//
//	go run github.com/conveyorgo/conveyor/cmd/conveyor new example.com/shop ./shop
package conveyor

import "embed"

// ModulePath is the path of the conveyor module.
const ModulePath = "github.com/conveyorgo/conveyor"

//go:embed go.mod go.sum
var moduleFiles embed.FS

// GoMod returns the content of the conveyor module's go.mod.
func GoMod() []byte { return mustRead("go.mod") }

// GoSum returns the content of the conveyor module's go.sum.
func GoSum() []byte { return mustRead("go.sum") }

func mustRead(name string) []byte {
	b, err := moduleFiles.ReadFile(name)
	if err != nil {
		panic("conveyor: embedded " + name + ": " + err.Error()) // cannot happen: checked at build time
	}
	return b
}
