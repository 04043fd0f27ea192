//go:build !linux

package main

import "errors"

// serveEpoll is -server epoll, which is written for Linux's epoll only.
func serveEpoll(listen, upstream string, keepAlive int, raw bool) error {
	return errors.New("floorproxy: -server epoll runs on Linux only")
}
