package tasks

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Bounds on what a Parquet file may make the reader allocate: the reader
// sizes its buffers from the pages' headers, and a corrupt header (or a
// corrupt LZ4 block, whose decoder doubles its buffer until it fits) would
// take all memory.
const (
	maxParquetPage  = 256 << 20 // one decompressed page
	maxParquetTotal = 1 << 30   // all pages, decompressed
)

// checkParquetPages walks every column chunk's page headers before any
// page is read, and refuses codecs whose decoders cannot be bounded (LZ4,
// Brotli, LZO), pages that decompress beyond maxParquetPage or in total
// beyond maxParquetTotal, and Snappy blocks that claim more than their
// page.
func checkParquetPages(f *parquet.File, data []byte) error {
	var total int64
	for g, rg := range f.Metadata().RowGroups {
		for c, cc := range rg.Columns {
			md := cc.MetaData
			where := fmt.Sprintf("row group %d, column %d", g+1, c+1)
			switch md.Codec {
			case format.Uncompressed, format.Snappy, format.Gzip, format.Zstd:
			default:
				return fmt.Errorf("%s is compressed with %s, which is not read (rewrite the file with snappy, gzip or zstd)", where, md.Codec)
			}
			start := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
				start = md.DictionaryPageOffset
			}
			end := start + md.TotalCompressedSize
			if start < 4 || md.TotalCompressedSize < 0 || end > int64(len(data))-8 || end < start {
				return fmt.Errorf("%s lies outside the file (bytes %d to %d of %d)", where, start, end, len(data))
			}
			r := bytes.NewReader(data[start:end])
			var proto thrift.CompactProtocol
			for r.Len() > 0 {
				var h format.PageHeader
				if err := thrift.NewDecoder(proto.NewReader(r)).Decode(&h); err != nil {
					return fmt.Errorf("%s: a page header does not decode: %v", where, err)
				}
				n, u := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
				if n < 0 || u < 0 || n > int64(r.Len()) {
					return fmt.Errorf("%s: a page claims %d bytes, %d are left in its chunk", where, n, r.Len())
				}
				if u > maxParquetPage {
					return fmt.Errorf("%s: a page decompresses to %d bytes, more than %d", where, u, maxParquetPage)
				}
				page := data[end-int64(r.Len()) : end-int64(r.Len())+n]
				if md.Codec == format.Snappy && len(page) > 0 {
					if v, k := binary.Uvarint(page); k <= 0 || v > uint64(u)+16 {
						return fmt.Errorf("%s: a Snappy block claims %d bytes for a %d-byte page", where, v, u)
					}
				}
				if total += u; total > maxParquetTotal {
					return fmt.Errorf("the file decompresses to more than %d bytes", maxParquetTotal)
				}
				r.Seek(n, 1)
			}
		}
	}
	return nil
}
