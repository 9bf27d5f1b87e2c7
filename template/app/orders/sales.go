package orders

import (
	"maps"
	"sync"
)

// Sales tallies the orders fulfilled by this process. It stands in for the
// app's own storage: a real shop would keep orders in its database, with
// the order id as a unique key.
type Sales struct {
	mu     sync.Mutex
	orders map[string]struct{} // ids of the orders fulfilled
	units  map[string]int      // units sold, by item
}

// NewSales returns an empty tally.
func NewSales() *Sales {
	return &Sales{orders: map[string]struct{}{}, units: map[string]int{}}
}

// Record records the order id of qty units of item and reports whether it
// is new. Events are delivered at least once: an order seen before is not
// counted again.
func (s *Sales) Record(id, item string, qty int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.orders[id]; seen {
		return false
	}
	s.orders[id] = struct{}{}
	s.units[item] += qty
	return true
}

// Totals returns the number of orders fulfilled and the units sold by item.
func (s *Sales) Totals() (orders int, units map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.orders), maps.Clone(s.units)
}
