package console

// ShortWorkerName is shortWorkerName, for the external tests.
var ShortWorkerName = shortWorkerName
