// Package backend is what every conveyor backend does alike, so that a
// backend is only what is specific to its store:
//
//   - Options: the options every backend has (Retry, Lease, MaxDataSize,
//     Logger), with one validation and one set of defaults;
//   - Handle: the open/closed state of a topic handle, and InvalidTopic, the
//     handle for a name that cannot name a topic;
//   - the errors a handle and a delivery report, worded alike;
//   - Retry: what the retry policy makes of a failed delivery;
//   - Register: the di registration of a backend's PubSub.
//
// The engine (package pubsub/engine) is built on these pieces and owns
// them for the backends that are its drivers (channelpubsub); dbpubsub and
// natspubsub call them directly until they are drivers too.
//
// A backend keeps its own exported Options struct (users write
// dbpubsub.Options{Lease: time.Minute}); it hands the shared fields to
// Options.Resolve and keeps what comes back.
package backend
