package di

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Shutdown stops every service of the injector in ctx and empties it.
//
// Services are stopped in reverse dependency order: a service is stopped
// before the services its provider resolved (the order do records; services
// with no dependency between them are stopped concurrently). A service is
// stopped through whichever of do's shutdown methods its value has:
// Shutdown(), Shutdown() error, Shutdown(context.Context) or
// Shutdown(context.Context) error. A value that has none of them but
// implements io.Closer is closed at the same point of the order (a value
// registered under several names is closed once). Lazy services that were
// never built are not built. Once ctx is done, do reports ctx's error for the
// services that remain instead of stopping them; Close is still called.
//
// Every failure is reported: the returned error joins one error per failing
// service, each naming the service. Afterwards the injector is empty (named
// factories included) and can be filled again.
func Shutdown(ctx context.Context) error {
	b, err := from(ctx, "Shutdown")
	if err != nil {
		return err
	}
	st := b.st
	report := st.root.ShutdownWithContext(ctx)

	st.mu.Lock()
	defer st.mu.Unlock()
	var errs []error
	for desc, err := range report.Errors {
		if err != nil {
			errs = append(errs, fmt.Errorf("di: shut down %s: %w", st.displayLocked(desc.Service), err))
		}
	}
	for doName, err := range st.closeErrs {
		errs = append(errs, fmt.Errorf("di: close %s: %w", st.displayLocked(doName), err))
	}
	st.reset()
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// closeService closes the io.Closer registered under doName, if any. It runs
// as do's after-shutdown hook, so at the service's place in the shutdown
// order.
func (st *state) closeService(doName string) {
	st.mu.Lock()
	c, ok := st.closers[doName]
	delete(st.closers, doName)
	if ok && reflect.ValueOf(c).Comparable() {
		if _, done := st.closed[c]; done {
			ok = false
		} else {
			st.closed[c] = struct{}{}
		}
	}
	st.mu.Unlock()
	if !ok {
		return
	}
	if err := c.Close(); err != nil {
		st.mu.Lock()
		st.closeErrs[doName] = err
		st.mu.Unlock()
	}
}

// displayLocked is the short name of the service do knows as doName.
func (st *state) displayLocked(doName string) string {
	if svc, ok := st.byDoName[doName]; ok {
		return svc.display
	}
	return doName
}
