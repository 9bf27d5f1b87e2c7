// Package interop holds conveyor's tests against the official CloudEvents
// SDK for Go (github.com/cloudevents/sdk-go/v2), in a module of its own so
// that the framework's go.mod does not depend on the SDK. It has no code:
// run its tests with make test, or go test ./... here.
package interop
