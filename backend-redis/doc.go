// Package redisq is a boson queue backend on Redis. It implements
// core.QueueBackend and core.Notifier.
package redisq
