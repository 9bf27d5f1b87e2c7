// Package orders is the shop's domain: the events it dispatches and the
// listeners that handle them. Listeners are structs whose fields are
// injected when the event service starts (see bootstrap.go).
package orders
