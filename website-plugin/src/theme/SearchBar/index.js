// The navbar's search button when the plugin's `search` option is on (the theme's SearchBar slot).
// It only marks itself with `data-bookwise-search`: the widget opens its search modal on a click
// there, as on Ctrl+K (⌘K) and `/`. Plain React.createElement, no JSX: the file is used as published,
// and a site's bundler does not compile packages in node_modules.
import React, {useEffect, useState} from 'react';
import './styles.css';

const MAC = /Mac|iPhone|iPad/;

function SearchIcon() {
  return React.createElement(
    'svg',
    {width: 16, height: 16, viewBox: '0 0 20 20', 'aria-hidden': 'true', className: 'bookwise-search__icon'},
    React.createElement('path', {
      d: 'M14.4 12.9a7 7 0 1 0-1.5 1.5l4.4 4.4 1.5-1.5-4.4-4.4zM8.6 13.5a4.9 4.9 0 1 1 0-9.8 4.9 4.9 0 0 1 0 9.8z',
      fill: 'currentColor',
    }),
  );
}

export default function SearchBar() {
  // The server renders "Ctrl K"; a Mac reader's browser shows ⌘K once hydrated.
  const [modifier, setModifier] = useState('Ctrl');
  useEffect(() => {
    if (MAC.test(navigator.platform || navigator.userAgent)) setModifier('⌘');
  }, []);
  return React.createElement(
    'button',
    {
      type: 'button',
      className: 'bookwise-search',
      'data-bookwise-search': '',
      'aria-label': 'Search',
      'aria-keyshortcuts': 'Control+K Meta+K /',
    },
    React.createElement(SearchIcon),
    React.createElement('span', {className: 'bookwise-search__label'}, 'Search'),
    React.createElement('kbd', {className: 'bookwise-search__keys'}, `${modifier} K`),
  );
}
