package analyze

// Group is a bucket's group: communication, compute or memory.
type Group string

// The bucket groups.
const (
	GroupCommunication Group = "communication"
	GroupCompute       Group = "compute"
	GroupMemory        Group = "memory"
)

// BucketID is a stable bucket identifier used in every output.
type BucketID string

// The bucket ids, in display order.
const (
	AllReduce     BucketID = "allreduce"
	AllGather     BucketID = "allgather"
	ReduceScatter BucketID = "reducescatter"
	AllToAll      BucketID = "alltoall"
	Broadcast     BucketID = "broadcast"
	SendRecv      BucketID = "sendrecv"
	CommOther     BucketID = "comm_other"
	MarlinGEMM    BucketID = "marlin_gemm"
	GEMM          BucketID = "gemm"
	Attention     BucketID = "attention"
	MoERouting    BucketID = "moe_routing"
	Norm          BucketID = "norm"
	Activation    BucketID = "activation"
	Elementwise   BucketID = "elementwise"
	Embedding     BucketID = "embedding"
	Sampling      BucketID = "sampling"
	Memcpy        BucketID = "memcpy"
	Memset        BucketID = "memset"
	Other         BucketID = "other"
)

// Bucket describes one bucket.
type Bucket struct {
	ID    BucketID `json:"id"`
	Label string   `json:"label"` // human name, e.g. "AllReduce"
	Group Group    `json:"group"` // communication, compute or memory
}

// Buckets returns every bucket in display order: communication first, then
// compute, then memory, then other.
func Buckets() []Bucket {
	return []Bucket{
		{AllReduce, "AllReduce", GroupCommunication},
		{AllGather, "AllGather", GroupCommunication},
		{ReduceScatter, "ReduceScatter", GroupCommunication},
		{AllToAll, "AllToAll", GroupCommunication},
		{Broadcast, "Broadcast", GroupCommunication},
		{SendRecv, "SendRecv", GroupCommunication},
		{CommOther, "Other comm", GroupCommunication},
		{MarlinGEMM, "Marlin GEMM", GroupCompute},
		{GEMM, "GEMM", GroupCompute},
		{Attention, "Attention", GroupCompute},
		{MoERouting, "MoE routing", GroupCompute},
		{Norm, "Norm", GroupCompute},
		{Activation, "Activation", GroupCompute},
		{Elementwise, "Elementwise", GroupCompute},
		{Embedding, "Embedding tables", GroupCompute},
		{Sampling, "Sampling", GroupCompute},
		{Memcpy, "Memcpy", GroupMemory},
		{Memset, "Memset", GroupMemory},
		{Other, "Other", GroupCompute},
	}
}

// bucketTable is Buckets() made once and never modified: BucketByID is
// called per GPU event and must not allocate.
var bucketTable = Buckets()

// BucketByID returns the bucket with the given id and whether it exists.
func BucketByID(id BucketID) (Bucket, bool) {
	for _, b := range bucketTable {
		if b.ID == id {
			return b, true
		}
	}
	return Bucket{}, false
}
