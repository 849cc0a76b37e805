package types

import "sort"

// AssignInput is one member's subscription for Assign.
type AssignInput struct {
	Member string
	Topics []string
}

// Assign computes a deterministic assignment. partitions gives each subscribed topic's
// partition count. The result has one entry per member, in the input order, each with topics
// sorted by name.
func Assign(assignor Assignor, members []AssignInput, partitions map[string]uint32) [][]TopicPartitions {
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return members[order[a]].Member < members[order[b]].Member })
	subscribers := map[string][]int{} // topic -> member indexes in address order
	var topics []string
	for _, i := range order {
		for _, t := range members[i].Topics {
			if _, seen := subscribers[t]; !seen {
				topics = append(topics, t)
			}
			subscribers[t] = append(subscribers[t], i)
		}
	}
	sort.Strings(topics)
	out := make([]map[string][]uint32, len(members))
	for i := range out {
		out[i] = map[string][]uint32{}
	}
	switch assignor {
	case ASSIGNOR_ROUND_ROBIN:
		// Deal (topic, partition) in order to the subscribing members, in a single rotation
		// over all members as Kafka's RoundRobinAssignor does.
		next := 0
		for _, t := range topics {
			subs := map[int]bool{}
			for _, i := range subscribers[t] {
				subs[i] = true
			}
			for p := uint32(0); p < partitions[t]; p++ {
				for !subs[order[next%len(order)]] {
					next++
				}
				i := order[next%len(order)]
				out[i][t] = append(out[i][t], p)
				next++
			}
		}
	default: // range
		for _, t := range topics {
			subs := subscribers[t]
			n, m := partitions[t], uint32(len(subs))
			per, extra := n/m, n%m
			p := uint32(0)
			for k, i := range subs {
				take := per
				if uint32(k) < extra {
					take++
				}
				for j := uint32(0); j < take; j++ {
					out[i][t] = append(out[i][t], p)
					p++
				}
			}
		}
	}
	res := make([][]TopicPartitions, len(members))
	for i, m := range out {
		for _, t := range topics {
			if ps, ok := m[t]; ok {
				res[i] = append(res[i], TopicPartitions{Topic: t, Partitions: ps})
			}
		}
	}
	return res
}

// Owns tells whether an assignment includes (topic, partition).
func Owns(assignment []TopicPartitions, topic string, partition uint32) bool {
	for _, tp := range assignment {
		if tp.Topic == topic {
			for _, p := range tp.Partitions {
				if p == partition {
					return true
				}
			}
		}
	}
	return false
}
