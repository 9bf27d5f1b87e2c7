// Package template is conveyor's app template: a small, complete service
// in the directory app/ (package main), compiled and tested with the rest
// of the module so that it never rots, and embedded here for the generator
// (cmd/conveyor) to copy.
//
// The app is what `make run` runs:
//
//	go run ./template/app                          # in-memory backend
//	CONVEYOR_BACKEND=db DATABASE_URL=... go run ./template/app
//
// and what `conveyor new` writes, with its import paths rewritten from
// ImportPath to the new module's path:
//
//	go run github.com/conveyorgo/conveyor/cmd/conveyor new example.com/shop ./shop
//
// The end-to-end tests of this package build the app's binary and drive it
// over HTTP on both backends.
package template
