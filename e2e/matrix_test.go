package e2e_test

import "testing"

// TestMatrix runs every scenario on every backend.
func TestMatrix(t *testing.T) {
	all := allScenarios()
	for _, f := range backends {
		t.Run(f.Name, func(t *testing.T) {
			for _, s := range all {
				t.Run(s.name, func(t *testing.T) {
					t.Parallel()
					s.run(newEnv(t, f))
				})
			}
		})
	}
}

func allScenarios() []scenario {
	var all []scenario
	for _, group := range [][]scenario{
		basicScenarios, retryScenarios, leaseScenarios, cancelScenarios,
		workflowScenarios, spawnScenarios, workerScenarios, readScenarios,
		periodicScenarios, runInfoScenarios, codecBridgeScenarios, flowScenarios, declareScenarios,
		faninScenarios,
	} {
		all = append(all, group...)
	}
	return all
}
