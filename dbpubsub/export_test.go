package dbpubsub

// ListenerPID is the backend PID of ps's listening connection, 0 while it
// has none; tests terminate it to check the reconnection.
func (ps *PubSub) ListenerPID() uint32 {
	if ps.s.listener == nil {
		return 0
	}
	return ps.s.listener.pid.Load()
}

// AnalyzeTarget is the statistics target of the PubSub's own analyses.
const AnalyzeTarget = analyzeTarget
