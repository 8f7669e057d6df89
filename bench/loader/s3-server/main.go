// A fast S3-compatible server for bench/loader's (b) rows: gofakes3 with its in-memory backend on
// 127.0.0.1. Started by run.ts (--s3-server gofakes3); prints "listening on http://HOST:PORT" once
// it accepts connections, and serves until it is killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port (0: one the OS picks)")
	flag.Parse()
	faker := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog()))
	ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", *host, *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, faker.Server()))
}
