package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Events lists the Events about the object called name in namespace,
// oldest first, as "Type Reason: Message" joined by " | " (or the error
// listing them), for failure messages and for tests that look for an
// Event.
func Events(ctx context.Context, client kubernetes.Interface, namespace, name string) string {
	evs, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	sort.SliceStable(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
	out := make([]string, 0, len(evs.Items))
	for _, e := range evs.Items {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return strings.Join(out, " | ")
}

// EventCount is how often Events with reason were recorded about the
// object called name in namespace: the recorder folds a repeated Event
// (same reason and message) into one object with a higher count, so
// counting the listed Events misses a repeat.
func EventCount(ctx context.Context, client kubernetes.Interface, namespace, name, reason string) (int, error) {
	evs, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}
