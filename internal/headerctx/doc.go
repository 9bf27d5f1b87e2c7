// Package headerctx holds the context key under which pubsub.WithHeader
// keeps the header an enqueue's ctx asks for. pubsub.WithHeader copies the
// header it is given, since its caller may change it afterwards; a
// conveyor package that makes a header for one enqueue and never touches
// it again (otelconveyor's trace context) puts it under Key as it is,
// which saves that copy on every message, and as a Checked when it made
// it valid by construction, which saves its check on every message.
package headerctx
