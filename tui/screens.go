package tui

// screenEntry registers a screen: its address, whether the tab bar lists
// it (and 1…9 reach it), and how to build it.
type screenEntry struct {
	id  screenID
	tab bool
	new func(*shared) Screen
}

// screenRegistry is every screen, tabs in the tab bar's order. A new screen
// is a file of its own (the screen, its id, its key map) and one line here.
var screenRegistry = []screenEntry{
	{scrPicker, true, newPicker},
	{scrEditor, true, newEditor},
	{scrDashboard, true, newDashboard},
	{scrRuns, true, newRunsBrowser},
	{scrSweeps, true, newSweepsScreen},
	{scrWatch, false, newWatcher},
}
