// Preloaded into the benchmarked server (node --import): answers the soak's 'handles' message
// with how many resources keep its event loop busy (sockets, servers, timers, file handles), as
// process.getActiveResourcesInfo() counts them.
process.on('message', (message) => {
  if (message?.type === 'handles') process.send({ type: 'handles', count: process.getActiveResourcesInfo().length })
})
// a 'message' listener refs the IPC channel again: it must not keep the server alive once it shuts down
process.channel?.unref()
